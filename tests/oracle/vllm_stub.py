"""Loads vLLM's own compressed-tensors resolver (utils.py, compressed_tensors.py)
from a vLLM wheel with every other vllm.* import stubbed: import plumbing
only, the decisions stay vLLM's own code. No vLLM code is kept in the tree."""
import importlib.abc, importlib.machinery, sys, types, zipfile

REAL = {
    "vllm.model_executor.layers.quantization.compressed_tensors.utils",
    "vllm.model_executor.layers.quantization.compressed_tensors.compressed_tensors",
}

class _Stub:
    def __init__(self, *a, **k): self.args, self.kwargs = a, k
    @classmethod
    def get_min_capability(cls): return 0
    def __call__(self, *a, **k): return _Stub()
    def __getattr__(self, n): return _Stub()

class _Platform:
    """The device ctq's vllm profile assumes: one SM 9.0 GPU (H100/H200)."""
    class _Cap:
        def to_int(self): return 90
    def get_device_capability(self, *a): return self._Cap()
    def has_device_capability(self, c, *a): return (c.to_int() if hasattr(c, "to_int") else c) <= 90
    def is_device_capability(self, c, *a): return (c.to_int() if hasattr(c, "to_int") else c) == 90
    def is_xpu(self): return False
    def is_rocm(self): return False
    def is_cuda(self): return True
    def is_cpu(self): return False
    def __getattr__(self, n): return lambda *a, **k: False

class _StubModule(types.ModuleType):
    def __init__(self, name):
        super().__init__(name)
        self.__path__ = []
        self._classes = {}
    def __getattr__(self, n):
        if n.startswith("__"):
            raise AttributeError(n)
        if n == "current_platform":
            return _Platform()
        if n == "get_linear_transform_schemes":
            # transform/linear.py: the generated configs carry no
            # transform_config, so a layer has no input or output transforms.
            return lambda *a, **k: (None, None)
        if n not in self._classes:
            self._classes[n] = type(n, (_Stub,), {"__module__": self.__name__})
        return self._classes[n]

class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, wheel):
        self.zip = zipfile.ZipFile(wheel)
    def find_spec(self, name, path, target=None):
        if name == "vllm" or name.startswith("vllm."):
            return importlib.machinery.ModuleSpec(name, self, is_package=name not in REAL)
        return None
    def create_module(self, spec):
        return None if spec.name in REAL else _StubModule(spec.name)
    def exec_module(self, module):
        if module.__name__ in REAL:
            src = self.zip.read(module.__name__.replace(".", "/") + ".py").decode()
            module.__file__ = "<wheel>/" + module.__name__
            exec(compile(src, module.__file__, "exec"), module.__dict__)

def load(wheel):
    sys.meta_path.insert(0, _Finder(wheel))
    ct = importlib.import_module("vllm.model_executor.layers.quantization.compressed_tensors.compressed_tensors")
    lin = importlib.import_module("vllm.model_executor.layers.linear")
    voc = importlib.import_module("vllm.model_executor.layers.vocab_parallel_embedding")
    att = importlib.import_module("vllm.model_executor.layers.attention")
    # vLLM's hierarchy, which get_quant_method's isinstance tests rely on:
    # ParallelLMHead is a VocabParallelEmbedding.
    voc.ParallelLMHead.__bases__ = (voc.VocabParallelEmbedding,)
    return ct, lin, voc, att
