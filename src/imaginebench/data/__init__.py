"""Episodes, datasets, their on-disk format, collection and loading."""

from imaginebench.data.collect import collect, rollout
from imaginebench.data.dataset import Episode, EpisodeDataset, Padded, Transitions
from imaginebench.data.hub import build_real, dataset_path, get_dataset, load_imaginary, load_real
from imaginebench.data.storage import DatasetError, load_dataset, read_manifest, save_dataset

__all__ = [
    "DatasetError", "Episode", "EpisodeDataset", "Padded", "Transitions", "build_real", "collect",
    "dataset_path", "get_dataset", "load_dataset", "load_imaginary", "load_real", "read_manifest",
    "rollout", "save_dataset",
]
