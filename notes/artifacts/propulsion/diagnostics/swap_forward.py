"""Oracle ablation: the imagined run_forward rollouts replaced by as many real expert run_forward episodes of the
rephrase level (rephrase phrasings), everything else as imagined."""
import sys
from imaginebench.data.storage import load_dataset, save_dataset
from imaginebench.data.dataset import EpisodeDataset
imag = load_dataset(sys.argv[1], verify=False); real = load_dataset(sys.argv[2], verify=False)
keep = [e for e in imag if e.task != "run_forward"]; n = sum(e.task == "run_forward" for e in imag)
fwd = [e for e in real if e.task == "run_forward"][:n]
md = dict(imag.metadata); md["ablation"] = f"oracle: {n} imagined run_forward rollouts replaced by real expert ones"
save_dataset(EpisodeDataset.from_episodes(keep + fwd, metadata=md, state_dim=18, action_shape=(6,)), sys.argv[3], overwrite=True)
print(len(keep), "imagined +", len(fwd), "real run_forward")
