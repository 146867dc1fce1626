import os
import lit.formats
from lit.llvm import llvm_config

config.name = "cbc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.cbc_obj_root, "test", "lit")
# "cuda": cbc was built with CUDA (CBC_CUDA), so `cbc compile` generates kernels with NVRTC and
# the runtime has the CUDA backend. Tests of kernels say REQUIRES: cuda; those of a CPU-only
# build say UNSUPPORTED: cuda.
if config.cbc_cuda:
    config.available_features.add("cuda")
# "mpi": cbc runs tensor-parallel ranks as an MPI job (CBC_MPI); %mpiexec starts one.
if config.cbc_mpi:
    config.available_features.add("mpi")
    config.substitutions.append(("%mpiexec", config.mpiexec))
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "Inputs"]
config.substitutions.append(("%src", config.cbc_src_root))
config.substitutions.append(("%configs", os.path.join(config.cbc_src_root, "test", "configs")))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(("%mm_fixtures", os.path.join(config.cbc_src_root, "test", "parity", "fixtures_mm")))
config.substitutions.append(("%fixtures", os.path.join(config.cbc_src_root, "test", "parity", "fixtures")))

llvm_config.use_default_substitutions()
# Prepend (append_path=True puts the directory first): cbc's tools first, then LLVM's test
# tools (FileCheck, not, count), then the system PATH for head, printf and friends.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.cbc_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(["cbc-opt", "cbc-translate", "cbc"], [config.cbc_tools_dir])
