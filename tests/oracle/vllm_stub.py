"""Runs vLLM's own compressed-tensors resolver, read from a vLLM wheel, without
importing the vllm package (which cannot import on a CPU-only machine; see
semantics_diff.py). Nothing of vLLM is kept in this tree: the source is read
from the wheel `make test-oracle` downloads.

Executed from the wheel, unchanged (REAL below):
  quantization/base_config.py            QuantizationConfig, QuantizeMethodBase
  quantization/kv_cache.py               BaseKVCacheMethod
  compressed_tensors/utils.py            should_ignore_layer, find_matched_target, ...
  compressed_tensors/compressed_tensors.py  from_config, get_quant_method, get_scheme(_dict),
                                         _get_scheme_from_parts and the _is_* predicates,
                                         CompressedTensorsKVCacheMethod
  compressed_tensors/compressed_tensors_embedding.py
  compressed_tensors/schemes/*.py        every scheme class: their constructors validate
                                         (bits, group size, symmetry) and raise ValueError
  compressed_tensors/transform/{linear,utils}.py
  compressed_tensors/compressed_tensors_moe/*.py  CompressedTensorsMoEMethod.get_moe_method and every
                                         MoE method's constructor (their checks raise); only
                                         the kernel back-end choice (select_*_backend) is
                                         replaced, by a placeholder pair

Written here (LAYERS below): the layer classes of the models in vLLM
(LinearBase and its subclasses, VocabParallelEmbedding / ParallelLMHead,
Attention, MLAAttention, RoutedExperts with the FusedMoEConfig fields the MoE
methods read, FusedMoEMethodBase / UnquantizedFusedMoEMethod) with vLLM's
class names and hierarchy, which the resolver's isinstance tests and
class-name matching read; marlin_utils' check_moe_marlin_supports_layer as
true (its shape test passes for the oracle's widths: hidden 128, group sizes
dividing the intermediate size); the device
(`current_platform`): one SM 9.0 GPU, as ctq's vllm profile assumes. Every
other `vllm.*` name is an inert placeholder (import plumbing: kernels, loggers,
parameters, triton) that no decision reads.
"""
import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import zipfile

CT = "vllm.model_executor.layers.quantization.compressed_tensors"
REAL_FIXED = {
    "vllm.model_executor.layers.quantization.base_config",
    "vllm.model_executor.layers.quantization.kv_cache",
    CT, CT + ".utils", CT + ".compressed_tensors", CT + ".compressed_tensors_embedding",
    CT + ".schemes", CT + ".transform", CT + ".transform.linear", CT + ".transform.utils",
}

LAYERS = {
    "vllm.model_executor.layers.linear": '''
import torch
from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
class LinearMethodBase(QuantizeMethodBase):
    def create_weights(self, *a, **k): pass
    def apply(self, *a, **k): pass
class UnquantizedLinearMethod(LinearMethodBase): pass
class LinearBase(torch.nn.Module): pass
class ReplicatedLinear(LinearBase): pass
class ColumnParallelLinear(LinearBase): pass
class MergedColumnParallelLinear(ColumnParallelLinear): pass
class QKVParallelLinear(ColumnParallelLinear): pass
class RowParallelLinear(LinearBase): pass
''',
    "vllm.model_executor.layers.vocab_parallel_embedding": '''
import torch
class VocabParallelEmbedding(torch.nn.Module): pass
class ParallelLMHead(VocabParallelEmbedding): pass
''',
    "vllm.model_executor.layers.attention": '''
import torch
class Attention(torch.nn.Module): pass
class MLAAttention(torch.nn.Module):
    """layers/attention/mla_attention.py: an nn.Module and AttentionLayerBase,
    not an Attention"""
''',
    "vllm.model_executor.layers.fused_moe": '''
import torch
from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
class FusedMoEMethodBase(QuantizeMethodBase):
    def __init__(self, moe):
        self.moe = moe
    def create_weights(self, *a, **k): pass
    def apply(self, *a, **k): pass
class UnquantizedFusedMoEMethod(FusedMoEMethodBase): pass
class _MoEConfig:
    """The FusedMoEConfig fields the MoE methods' constructors read."""
    def __init__(self, hidden, inter, n):
        self.hidden_dim = hidden
        self.intermediate_size_per_partition = inter
        self.num_experts = self.num_local_experts = n
        self.has_bias = False
        self.is_act_and_mul = True
class RoutedExperts(torch.nn.Module):
    """fused_moe/routed_experts.py: the layer FusedMoE(prefix=...) asks
    get_quant_method with, layer_name = the FusedMoE prefix."""
    def __init__(self, hidden=128, inter=128, n=2):
        super().__init__()
        self.moe_config = _MoEConfig(hidden, inter, n)
        self.hidden_size = hidden
        self.intermediate_size_per_partition = inter
        self.global_num_experts = self.local_num_experts = n
def FusedMoE(*a, **k):
    raise NotImplementedError("the oracle builds RoutedExperts directly")
''',
    "vllm.model_executor.layers.quantization.utils.marlin_utils": '''
def check_moe_marlin_supports_layer(layer, group_size, allow_tile_padding=True):
    return True  # ctq's vllm profile assumes an SM 9.0 GPU and real model widths
def get_marlin_input_dtype(*a, **k):
    return None
''',
}


MOE = CT + ".compressed_tensors_moe"


class _Platform:
    """One SM 9.0 GPU (H100/H200). Unknown predicates raise, so that no
    decision silently reads a placeholder."""
    class _Cap(tuple):
        def to_int(self):
            return self[0] * 10 + self[1]

    def get_device_capability(self, *a):
        return self._Cap((9, 0))

    def has_device_capability(self, c, *a):
        return (c.to_int() if hasattr(c, "to_int") else c) <= 90

    def is_device_capability(self, c, *a):
        return (c.to_int() if hasattr(c, "to_int") else c) == 90

    def is_xpu(self): return False
    def is_rocm(self): return False
    def is_cuda(self): return True
    def is_cpu(self): return False
    def is_fp8_fnuz(self): return False
    def is_cuda_alike(self): return True


class _AutoMeta(type):
    def __getattr__(cls, n):
        if n.startswith("__"):
            raise AttributeError(n)
        sub = _AutoMeta(n, (_Auto,), {})
        setattr(cls, n, sub)
        return sub


class _Auto(metaclass=_AutoMeta):
    """Inert placeholder: any attribute, call, item or iteration succeeds."""
    def __init__(self, *a, **k): pass
    def __getattr__(self, n):
        if n.startswith("__"):
            raise AttributeError(n)
        return _AutoMeta(n, (_Auto,), {})()
    def __call__(self, *a, **k): return _Auto()
    def __getitem__(self, k): return _Auto()
    def __iter__(self): return iter(())


class _PlaceholderModule(types.ModuleType):
    def __getattr__(self, n):
        if n.startswith("__"):
            raise AttributeError(n)
        if n == "current_platform":
            v = _Platform()
        else:
            v = _AutoMeta(n, (_Auto,), {"__module__": self.__name__})
        setattr(self, n, v)
        return v


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, wheel):
        self.zip = zipfile.ZipFile(wheel)
        names = set(self.zip.namelist())
        self.real = {}  # module name -> (path in wheel, is_package)
        for m in REAL_FIXED:
            base = m.replace(".", "/")
            if base + "/__init__.py" in names:
                self.real[m] = (base + "/__init__.py", True)
            elif base + ".py" in names:
                self.real[m] = (base + ".py", False)
            else:
                raise SystemExit("vllm_stub: %s not in %s" % (base, wheel))
        for sub in ("/schemes/", "/compressed_tensors_moe/"):
            pre = CT.replace(".", "/") + sub
            for n in names:
                if n.startswith(pre) and n.endswith(".py") and "/" not in n[len(pre):] \
                        and not n.endswith("__init__.py"):
                    self.real[n[:-3].replace("/", ".")] = (n, False)
        base = MOE.replace(".", "/")
        if base + "/__init__.py" in names:
            self.real[MOE] = (base + "/__init__.py", True)

    def find_spec(self, name, path, target=None):
        if name == "vllm" or name.startswith("vllm."):
            is_pkg = self.real[name][1] if name in self.real else True
            return importlib.machinery.ModuleSpec(name, self, is_package=is_pkg)
        return None

    def create_module(self, spec):
        if spec.name in self.real:
            return None
        m = _PlaceholderModule(spec.name)  # LAYERS: other names are placeholders
        m.__path__ = []
        return m

    def exec_module(self, module):
        name = module.__name__
        if name in self.real:
            path, is_pkg = self.real[name]
            src = self.zip.read(path).decode()
            module.__file__ = "<wheel>/" + path
            if is_pkg:
                module.__path__ = []
        elif name in LAYERS:
            src = LAYERS[name]
            module.__file__ = "<vllm_stub>/" + name
        else:
            return
        exec(compile(src, module.__file__, "exec"), module.__dict__)
        if name.startswith(MOE + "."):
            # the MoE methods' kernel back-end choice (select_*_moe_backend
            # returns (backend, experts class)) decides nothing here
            for k in list(module.__dict__):
                if k.startswith("select_") and k.endswith("_backend"):
                    module.__dict__[k] = lambda *a, **kw: (_Auto(), _Auto())


class VLLM:
    """The loaded resolver: `ct` is compressed_tensors.py, `utils` utils.py,
    and the layer classes."""
    def __init__(self, wheel):
        for k in [k for k in sys.modules if k == "vllm" or k.startswith("vllm.")]:
            del sys.modules[k]
        sys.meta_path.insert(0, _Finder(wheel))
        self.ct = importlib.import_module(CT + ".compressed_tensors")
        self.utils = importlib.import_module(CT + ".utils")
        lin = importlib.import_module("vllm.model_executor.layers.linear")
        voc = importlib.import_module("vllm.model_executor.layers.vocab_parallel_embedding")
        att = importlib.import_module("vllm.model_executor.layers.attention")
        moe = importlib.import_module("vllm.model_executor.layers.fused_moe")
        self.RoutedExperts = moe.RoutedExperts
        self.MLAAttention = att.MLAAttention
        self.ColumnParallelLinear = lin.ColumnParallelLinear
        self.ReplicatedLinear = lin.ReplicatedLinear
        self.QKVParallelLinear = lin.QKVParallelLinear
        self.MergedColumnParallelLinear = lin.MergedColumnParallelLinear
        self.RowParallelLinear = lin.RowParallelLinear
        self.UnquantizedLinearMethod = lin.UnquantizedLinearMethod
        self.VocabParallelEmbedding = voc.VocabParallelEmbedding
        self.ParallelLMHead = voc.ParallelLMHead
        self.Attention = att.Attention


def load(wheel):
    return VLLM(wheel)
