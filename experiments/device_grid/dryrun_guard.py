"""Dry-run guard: only modules the device image has (KINDS.md list), the carried ones, the stdlib and ours import."""
import sys, importlib.abc
DEVICE = """absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-ml-py onnx onnx-ir onnxruntime onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec patsy peft pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham simplejson six sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics torchvision tqdm transformers treescope triton typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp""".split()
ALIASES = {"pillow": "PIL", "pyyaml": "yaml", "scikit-learn": "sklearn", "scikit-image": "skimage", "python-dateutil": "dateutil",
           "opencv-python-headless": "cv2", "absl-py": "absl", "huggingface-hub": "huggingface_hub", "pytorch-lightning": "pytorch_lightning",
           "protobuf": "google", "nvidia-ml-py": "pynvml", "py-cpuinfo": "cpuinfo", "attrs": "attr"}
ALLOWED = {ALIASES.get(n, n.replace("-", "_")) for n in DEVICE} | {"torchgen", "functorch", "attrs", "mpl_toolkits", "_yaml", "pkg_resources", "_distutils_hack", "setuptools"}
CARRIED = {"d3rlpy", "gym", "gym_notices", "structlog", "dataclasses_json", "marshmallow", "gymnasium", "farama_notifications",
           "metaworld", "minigrid", "glfw", "mujoco", "pygame", "imaginebench", "sitecustomize", "typing_inspect", "mypy_extensions", "typer", "pydantic", "pydantic_core", "annotated_types", "typing_inspection", "annotated_doc"}
BLOCKED = []
class Guard(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if "." in name or top in sys.stdlib_module_names or top in ALLOWED or top in CARRIED or top.startswith("_"):
            return None
        BLOCKED.append(top)
        raise ModuleNotFoundError(f"dry run: {top!r} is not on the device")
sys.meta_path.insert(0, Guard())
import importlib.util as _u
_orig_find_spec = _u.find_spec
def _find_spec(name, package=None):
    top = name.lstrip(".").split(".")[0]
    if not name.startswith(".") and not (top in sys.stdlib_module_names or top in ALLOWED or top in CARRIED or top.startswith("_")):
        return None
    return _orig_find_spec(name, package)
_u.find_spec = _find_spec
