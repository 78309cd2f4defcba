# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Where OLAS comes from
#
# If the similarity of Order-Level Attention across models (OLAS) is learned in
# pre-training, it must vanish when the learned knowledge is taken out of the weights
# {cite}`liang2025olas`. Three controls, applied to a *target* model whose maps then query
# the gallery of a trained *source* model (SSIM retrieval as in the previous chapter:
# resize to 50 x 50, sinks cleaned):
#
# - **random init**: the same architecture and config, freshly initialised;
# - **shuffled layers**: the trained layers in a random order;
# - **noise**: Gaussian noise on every weight tensor with standard deviation `scale` times
#   that tensor's own standard deviation, for a sweep of scales (the paper speaks of
#   parameter perturbation; the official code tests the first two).
#
# The encoder pair (MiniLM-L6 as target, MPNet-base as source) carries the whole sweep,
# because a MiniLM forward pass is cheap on a CPU; the causal pair (Gemma-3-270M target,
# Qwen2.5-0.5B source) gets fewer texts and scales. Departures from the paper: smaller,
# quantised models (the causal ones), EWT text, fewer texts, a CPU-sized proxy.

# %% tags=["parameters"]
profile = "default"  # smoke, default or paper: sets every size
seeds: list[int] | None = None  # None: the profile's seeds for the proxy
device: str | None = None  # None: CUDA when available, else CPU

# %%
import matplotlib.pyplot as plt
import pandas as pd
import torch

import olacore.profiles
from olacore.cache import cached_ola
from olacore.controls import controls_retrieval, random_init
from olacore.data import similarity_texts
from olacore.models import load_model
from olacore.proxy import Augment, ProxyConfig, cached_train_proxy
from olacore.similarity import chance_hits, comparable_maps, retrieval_table, verdict
from olacore.timing import Stopwatch

watch = Stopwatch()
cfg = olacore.profiles.settings("controls", profile)
if seeds is not None:
    cfg["seeds"] = list(seeds)
pd.set_option("display.precision", 3)
channels = [1, 2, 3, "rollout"]
cfg

# %% [markdown]
# ## Retrieval under controls
#
# For each pair: load both models, take the trained source's maps as the gallery, then
# for the trained target and each control extract OLA (cached under the control's own
# fingerprint: a control never reuses the trained model's cache) and retrieve. The
# control seed is fixed (`seed` in the profile).

# %%
def run_pair(target_name, source_name, num_texts, noise):
    texts = similarity_texts(num_texts)
    source = load_model(source_name, device=device)
    source_results = cached_ola(source, [t.text for t in texts], cfg["max_order"])
    source_maps = comparable_maps(source_results, channels, align="resize", sinks="clean", size=cfg["size"])
    target = load_model(target_name, device=device)
    table, maps = controls_retrieval(target, source_maps, texts, channels, max_order=cfg["max_order"],
                                     noise_scales=noise, seed=cfg["seed"], size=cfg["size"])
    # both models without knowledge: random target against a random source
    random_source = random_init(source, cfg["seed"] + 1)
    random_maps = comparable_maps(cached_ola(random_source, [t.text for t in texts], cfg["max_order"]), channels,
                                  align="resize", sinks="clean", size=cfg["size"])
    random_target = next(m for (control, _), m in maps.items() if control == "random init")
    both = retrieval_table({"source": random_maps, "target": random_target}, channels,
                           pairs=[("source", "target")]).drop(columns=["source", "target"])
    both.insert(0, "scale", float("nan"))
    both.insert(0, "control", "both random init")
    table = pd.concat([table, both], ignore_index=True)
    return texts, source_maps, maps, table


with watch("encoder pair: extraction + retrieval"):
    enc_texts, enc_source_maps, enc_maps, enc_table = run_pair(
        cfg["encoder_target"], cfg["encoder_source"], cfg["encoder_texts"], cfg["encoder_noise"])
with watch("causal pair: extraction + retrieval"):
    cau_texts, cau_source_maps, cau_maps, cau_table = run_pair(
        cfg["causal_target"], cfg["causal_source"], cfg["causal_texts"], cfg["causal_noise"])

# %%
def show(table, num_texts, title):
    print(f"{title}: Hits@1 % ({num_texts} texts; chance {100 * chance_hits(num_texts, 1):.1f} %)")
    wide = table.assign(**{"hits@1": 100 * table["hits@1"]}).pivot_table(
        index=["control", "scale"], columns="channel", values="hits@1", dropna=False, sort=False)
    return wide.dropna(how="all").round(1)


show(enc_table, cfg["encoder_texts"], f"target {cfg['encoder_target']} vs trained source {cfg['encoder_source']}")

# %%
show(cau_table, cfg["causal_texts"], f"target {cfg['causal_target']} vs trained source {cfg['causal_source']}")

# %% [markdown]
# ## Hits@1 against the noise scale
#
# One line per order; the dashed line is the trained model's value and the dotted line is
# chance. Scale 0 is drawn at the left edge of the (symmetric-log) axis.

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
for ax, table, num_texts, title in [
    (axes[0], enc_table, cfg["encoder_texts"], f"encoders: {cfg['encoder_target']} -> {cfg['encoder_source']}"),
    (axes[1], cau_table, cfg["causal_texts"], f"causal: {cfg['causal_target']} -> {cfg['causal_source']}"),
]:
    for i, channel in enumerate(["order 1", "order 2", "order 3", "rollout"]):
        rows = table[(table["channel"] == channel) & table["control"].isin(["trained", "noise"])].sort_values("scale")
        line, = ax.plot(rows["scale"], 100 * rows["hits@1"], marker="o", label=channel)
        trained = table[(table["channel"] == channel) & (table["control"] == "trained")]["hits@1"].iloc[0]
        ax.axhline(100 * trained, color=line.get_color(), ls="--", lw=0.8)
    ax.axhline(100 * chance_hits(num_texts, 1), color="grey", ls=":", label="chance")
    ax.set_xscale("symlog", linthresh=0.01)
    ax.set(xlabel="noise scale (x each tensor's std)", ylabel="Hits@1 %", title=title, ylim=(-2, 102))
axes[0].legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# ## A cheap proxy run
#
# The visual proxy (previous chapter) trained on the trained *source* encoder's maps and
# tested, unchanged, on the target under each control. One source model, so the checkpoint
# is chosen on a fixed augmented view of the source maps (never on a target). CPU-sized:
# narrow ResNet-18, small images, the previous chapter's few hundred steps; seeds from the
# profile. Trained runs are kept in the cache, like the previous chapter's.

# %%
proxy_index = [channels.index(1)]
config = ProxyConfig(iterations=cfg["proxy_iterations"], batch_size=cfg["proxy_batch"], lr=cfg["proxy_lr"],
                     width=cfg["proxy_width"], eval_every=cfg["proxy_eval_every"], augment=Augment(), cosine=True)
resize = lambda m: torch.nn.functional.interpolate(m, size=cfg["proxy_size"], mode="bilinear", antialias=True)  # noqa: E731
proxy_rows = []
on_cpu = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu")).type == "cpu"
threads = torch.get_num_threads()
if on_cpu:
    torch.set_num_threads(1)  # small convolutions: one thread is fastest on a shared CPU
with watch("proxy (training or cache)"):
    for seed in cfg["seeds"]:
        run = cached_train_proxy([resize(enc_source_maps[:, proxy_index])], None, config, seed=seed, device=device,
                                 progress=False)
        for (control, scale), maps in enc_maps.items():
            proxy_rows.append({"control": control, "scale": scale, "seed": seed,
                               "accuracy %": 100 * run.evaluate(resize(maps[:, proxy_index]))})
torch.set_num_threads(threads)
proxy = pd.DataFrame(proxy_rows).groupby(["control", "scale"], dropna=False, sort=False)["accuracy %"].agg(["mean", "std"])
print(f"order-1 proxy, trained on {cfg['encoder_source']}, seeds {cfg['seeds']}; chance {100 / cfg['encoder_texts']:.1f} %")
proxy.round(1)

# %% [markdown]
# ## Verdicts
#
# The claim is that OLAS vanishes without learned knowledge: for each control, the
# first-order Hits@1 should fall to near chance. Same fixed rule as the previous chapter
# (`olacore.similarity.verdict`), applied to the *similarity that remains*: "vanishes" when
# the remaining Hits@1 does not even hold weakly.

# %%
rows = []
for kind, table, num_texts in [("encoder", enc_table, cfg["encoder_texts"]), ("causal", cau_table, cfg["causal_texts"])]:
    chance = chance_hits(num_texts, 1)
    first = table[table["channel"] == "order 1"]
    for _, r in first.iterrows():
        remaining = verdict(r["hits@1"], chance)
        rows.append({"pair": kind, "control": r["control"], "scale": r["scale"], "Hits@1 %": 100 * r["hits@1"],
                     "chance %": 100 * chance, "similarity": remaining,
                     "OLAS vanishes?": "-" if r["control"] == "trained" or r["scale"] < 0.3
                     else ("yes" if remaining == "does not hold here" else "no")})
pd.DataFrame(rows).round({"Hits@1 %": 1, "chance %": 1})  # noise scales keep their two decimals

# %%
print(watch.report())
