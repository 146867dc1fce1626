#include "codegen/artefact_writer.h"

#include "dialects/cbc/CbcOps.h"
#include "runtime/artefact.h"
#include "runtime/schema/model_generated.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <map>

namespace cbc::codegen {

using namespace mlir;
namespace fbs = flatbuffers;

namespace {

fb::DType dtypeOf(Type t) {
  if (t.isBF16()) return fb::DType::BF16;
  if (t.isF16()) return fb::DType::F16;
  if (t.isInteger(32)) return fb::DType::I32;
  return fb::DType::F32;
}

fb::DType dtypeNamed(StringRef name) {
  if (name == "bf16") return fb::DType::BF16;
  if (name == "f16") return fb::DType::F16;
  return fb::DType::F32;
}

std::vector<int64_t> shapeOf(Type t) {
  auto tt = llvm::cast<RankedTensorType>(t);
  std::vector<int64_t> shape;
  for (int64_t d : tt.getShape())
    shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
  return shape;
}

// Internal bookkeeping attributes are not instruction attributes.
bool isInternal(StringRef name) {
  return name == "cbc.index" || name == "cbc.buffers" || name == "operandSegmentSizes";
}

fbs::Offset<fb::Attr> writeAttr(fbs::FlatBufferBuilder &fbb, StringRef name, Attribute attr) {
  // Payload vectors and strings must be built before the table that refers to them.
  fb::AttrKind kind = fb::AttrKind::Int;
  int64_t i = 0;
  double f = 0;
  fbs::Offset<fbs::String> s;
  fbs::Offset<fbs::Vector<int64_t>> ints;
  fbs::Offset<fbs::Vector<double>> floats;
  if (auto b = llvm::dyn_cast<BoolAttr>(attr)) {
    i = b.getValue();
  } else if (auto ia = llvm::dyn_cast<IntegerAttr>(attr)) {
    i = ia.getInt();
  } else if (auto fa = llvm::dyn_cast<FloatAttr>(attr)) {
    kind = fb::AttrKind::Float;
    f = fa.getValueAsDouble();
  } else if (llvm::isa<UnitAttr>(attr)) {
    i = 1;
  } else if (auto sa = llvm::dyn_cast<StringAttr>(attr)) {
    kind = fb::AttrKind::String;
    s = fbb.CreateString(sa.getValue().str());
  } else if (auto a = llvm::dyn_cast<DenseI64ArrayAttr>(attr)) {
    kind = fb::AttrKind::Ints;
    ints = fbb.CreateVector(std::vector<int64_t>(a.asArrayRef().begin(), a.asArrayRef().end()));
  } else if (auto a = llvm::dyn_cast<DenseF32ArrayAttr>(attr)) {
    kind = fb::AttrKind::Floats;
    floats = fbb.CreateVector(std::vector<double>(a.asArrayRef().begin(), a.asArrayRef().end()));
  } else {
    // Anything else is kept in its printed form so that nothing is silently dropped.
    std::string printed;
    llvm::raw_string_ostream os(printed);
    attr.print(os);
    kind = fb::AttrKind::String;
    s = fbb.CreateString(os.str());
  }
  auto n = fbb.CreateString(name.str());
  fb::AttrBuilder ab(fbb);
  ab.add_name(n);
  ab.add_kind(kind);
  ab.add_i(i);
  ab.add_f(f);
  if (!s.IsNull())
    ab.add_s(s);
  if (!ints.IsNull())
    ab.add_ints(ints);
  if (!floats.IsNull())
    ab.add_floats(floats);
  return ab.Finish();
}

struct ValueTable {
  std::map<const void *, int> ids;
  std::vector<fbs::Offset<fb::Value>> values;
};

FailureOr<fbs::Offset<fb::Program>> writeProgram(fbs::FlatBufferBuilder &fbb, ModuleOp module,
                                                 func::FuncOp func,
                                                 std::vector<fbs::Offset<fb::WeightEntry>> &weights) {
  ValueTable table;
  std::map<std::string, int> weightIndex;
  auto addValue = [&](Value v, fb::ValueKind kind, const std::string &argName, int weight,
                      int arena, int64_t offset) {
    auto shape = fbb.CreateVector(shapeOf(v.getType()));
    auto an = argName.empty() ? 0 : fbb.CreateString(argName);
    fb::ValueBuilder vb(fbb);
    vb.add_kind(kind);
    vb.add_dtype(dtypeOf(llvm::cast<RankedTensorType>(v.getType()).getElementType()));
    vb.add_shape(shape);
    if (!argName.empty())
      vb.add_arg_name(an);
    vb.add_weight(weight);
    vb.add_arena((int8_t)arena);
    vb.add_offset(offset);
    int id = (int)table.values.size();
    table.values.push_back(vb.Finish());
    table.ids[v.getAsOpaquePointer()] = id;
    return id;
  };

  Block &block = func.getBody().front();
  for (BlockArgument arg : block.getArguments()) {
    auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "cbc.name");
    if (!name)
      return func.emitError("step argument ") << arg.getArgNumber() << " has no cbc.name";
    addValue(arg, fb::ValueKind::Argument, name.str(), -1, -1, 0);
  }

  std::vector<fbs::Offset<fb::Instr>> instrs;
  int output = -1;
  for (Operation &op : block) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (ret.getNumOperands() != 1)
        return ret.emitError("the step must return exactly the logits");
      output = table.ids.at(ret.getOperand(0).getAsOpaquePointer());
      continue;
    }
    if (auto w = dyn_cast<WeightRefOp>(op)) {
      // Weights are values, not instructions; one manifest entry per name.
      std::string name = w.getName().str();
      auto it = weightIndex.find(name);
      if (it == weightIndex.end()) {
        std::vector<fbs::Offset<fb::WeightPart>> parts;
        for (Attribute part : w.getSources()) {
          std::vector<std::string> names;
          for (Attribute n : llvm::cast<ArrayAttr>(part))
            names.push_back(llvm::cast<StringAttr>(n).str());
          auto ns = fbb.CreateVectorOfStrings(names);
          parts.push_back(fb::CreateWeightPart(fbb, ns));
        }
        auto type = llvm::cast<RankedTensorType>(w.getType());
        std::vector<int64_t> regroup;
        if (auto r = w.getRegroupAttr())
          regroup.assign(r.asArrayRef().begin(), r.asArrayRef().end());
        std::vector<double> rowScales;
        if (auto r = w.getRowScalesAttr())
          rowScales.assign(r.asArrayRef().begin(), r.asArrayRef().end());
        int64_t blockDiag = w.getBlockDiagAttr() ? w.getBlockDiagAttr().getInt() : 0;
        auto entry = fb::CreateWeightEntry(
            fbb, fbb.CreateString(name), dtypeOf(type.getElementType()),
            fbb.CreateVector(shapeOf(type)), fbb.CreateVector(parts),
            w.getCombine() == "stack" ? fb::Combine::Stack : fb::Combine::None,
            w.getTranspose(), fbb.CreateVector(regroup), blockDiag,
            rowScales.empty() ? 0 : fbb.CreateVector(rowScales));
        it = weightIndex.emplace(name, (int)weights.size()).first;
        weights.push_back(entry);
      }
      addValue(w.getResult(), fb::ValueKind::Weight, "", it->second, -1, 0);
      continue;
    }
    auto buffers = op.getAttrOfType<ArrayAttr>("cbc.buffers");
    if (op.getNumResults() && (!buffers || buffers.size() != op.getNumResults()))
      return op.emitError("op has no buffer plan; run cbc-schedule first");
    std::vector<int> inputs, outputs;
    for (Value v : op.getOperands()) {
      auto it = table.ids.find(v.getAsOpaquePointer());
      if (it == table.ids.end())
        return op.emitError("operand defined outside the step");
      inputs.push_back(it->second);
    }
    for (auto [i, r] : llvm::enumerate(op.getResults())) {
      auto slot = llvm::cast<DenseI64ArrayAttr>(buffers[i]).asArrayRef();
      outputs.push_back(addValue(r, fb::ValueKind::Activation, "", -1, (int)slot[0], slot[1]));
    }
    std::vector<fbs::Offset<fb::Attr>> attrs;
    for (NamedAttribute a : op.getAttrs())
      if (!isInternal(a.getName().getValue()))
        attrs.push_back(writeAttr(fbb, a.getName().getValue(), a.getValue()));
    instrs.push_back(fb::CreateInstr(fbb, fbb.CreateString(op.getName().getStringRef().str()),
                                     fbb.CreateVector(inputs), fbb.CreateVector(outputs),
                                     fbb.CreateVector(attrs)));
  }
  auto arena = module->getAttrOfType<DictionaryAttr>("cbc.arena");
  if (!arena)
    return module.emitError("module has no cbc.arena; run cbc-schedule first");
  auto valuesVec = fbb.CreateVector(table.values);
  auto instrsVec = fbb.CreateVector(instrs);
  fb::ProgramBuilder pb(fbb);
  pb.add_values(valuesVec);
  pb.add_instrs(instrsVec);
  pb.add_output(output);
  pb.add_token_row_elems(llvm::cast<IntegerAttr>(arena.get("token_row_elems")).getInt());
  pb.add_request_row_elems(llvm::cast<IntegerAttr>(arena.get("request_row_elems")).getInt());
  return pb.Finish();
}

FailureOr<fbs::Offset<fb::CachePlan>> writeCachePlan(fbs::FlatBufferBuilder &fbb, ModuleOp module) {
  auto plan = module->getAttrOfType<DictionaryAttr>("cbc.cache_plan");
  if (!plan)
    return module.emitError("module has no cbc.cache_plan; run cbc-plan-cache first");
  auto getI = [](DictionaryAttr d, StringRef k) { return llvm::cast<IntegerAttr>(d.get(k)).getInt(); };
  std::vector<fbs::Offset<fb::CacheGroup>> groups;
  for (Attribute g : llvm::cast<ArrayAttr>(plan.get("groups"))) {
    auto d = llvm::cast<DictionaryAttr>(g);
    StringRef ret = llvm::cast<StringAttr>(d.get("retention")).getValue();
    auto layers = llvm::cast<DenseI64ArrayAttr>(d.get("layers")).asArrayRef();
    std::vector<int> ls(layers.begin(), layers.end());
    groups.push_back(fb::CreateCacheGroup(
        fbb, (int)getI(d, "id"),
        ret == "window" ? fb::Retention::Window : ret == "chunk" ? fb::Retention::Chunk : fb::Retention::All,
        getI(d, "tokens"), fbb.CreateVector(ls), getI(d, "bytes_per_token")));
  }
  std::vector<fbs::Offset<fb::CacheLayer>> layers;
  for (Attribute l : llvm::cast<ArrayAttr>(plan.get("layers"))) {
    auto d = llvm::cast<DictionaryAttr>(l);
    std::vector<fbs::Offset<fb::CacheRow>> rows;
    for (Attribute r : llvm::cast<ArrayAttr>(d.get("rows"))) {
      auto rd = llvm::cast<DictionaryAttr>(r);
      rows.push_back(fb::CreateCacheRow(
          fbb, fbb.CreateString(llvm::cast<StringAttr>(rd.get("name")).str()), getI(rd, "elems")));
    }
    layers.push_back(fb::CreateCacheLayer(fbb, (int)getI(d, "layer"), (int)getI(d, "group"),
                                          fbb.CreateVector(rows)));
  }
  std::vector<fbs::Offset<fb::StateDecl>> states;
  if (auto list = plan.getAs<ArrayAttr>("states"))
    for (Attribute st : list) {
      auto d = llvm::cast<DictionaryAttr>(st);
      auto shape = llvm::cast<DenseI64ArrayAttr>(d.get("shape")).asArrayRef();
      states.push_back(fb::CreateStateDecl(
          fbb, (int)getI(d, "layer"), fbb.CreateString(llvm::cast<StringAttr>(d.get("name")).str()),
          fbb.CreateVector(std::vector<int64_t>(shape.begin(), shape.end())), fb::DType::F32,
          getI(d, "bytes")));
    }
  return fb::CreateCachePlan(fbb, (int)getI(plan, "block_size"),
                             dtypeNamed(llvm::cast<StringAttr>(plan.get("kv_dtype")).getValue()),
                             fbb.CreateVector(groups), fbb.CreateVector(layers),
                             fbb.CreateVector(states));
}

FailureOr<fbs::Offset<fb::ModelMeta>> writeMeta(fbs::FlatBufferBuilder &fbb, ModuleOp module) {
  auto meta = module->getAttrOfType<DictionaryAttr>("cbc.model");
  if (!meta)
    return module.emitError("module has no cbc.model metadata");
  auto getI = [&](StringRef k) -> int64_t {
    auto a = meta.getAs<IntegerAttr>(k);
    return a ? a.getInt() : 0;
  };
  auto getS = [&](StringRef k) -> std::string {
    auto a = meta.getAs<StringAttr>(k);
    return a ? a.str() : std::string();
  };
  std::vector<int64_t> eos;
  if (auto e = meta.getAs<DenseI64ArrayAttr>("eos_token_ids"))
    eos.assign(e.asArrayRef().begin(), e.asArrayRef().end());
  std::vector<fbs::Offset<fb::AliasPair>> aliases;
  if (auto al = meta.getAs<ArrayAttr>("weight_aliases"))
    for (Attribute pair : al) {
      auto p = llvm::cast<ArrayAttr>(pair);
      aliases.push_back(fb::CreateAliasPair(fbb, fbb.CreateString(llvm::cast<StringAttr>(p[0]).str()),
                                            fbb.CreateString(llvm::cast<StringAttr>(p[1]).str())));
    }
  auto bos = meta.getAs<IntegerAttr>("bos_token_id");
  return fb::CreateModelMeta(fbb, fbb.CreateString(getS("model_type")), getI("vocab_size"),
                             getI("hidden_size"), getI("num_layers"), getI("max_positions"),
                             fbb.CreateVector(eos), bos ? bos.getInt() : -1,
                             fbb.CreateString(getS("checkpoint_dtype")),
                             fbb.CreateString(getS("quantization")), fbb.CreateVector(aliases));
}

fbs::Offset<fb::KernelBundle> writeKernels(fbs::FlatBufferBuilder &fbb, const KernelBundleOut &k) {
  std::vector<fbs::Offset<fb::Cubin>> cubins;
  for (const KernelImageOut &c : k.cubins)
    cubins.push_back(fb::CreateCubin(fbb, fbb.CreateString(c.arch), fbb.CreateVector(c.image),
                                     fbb.CreateVector(c.registers), fbb.CreateVector(c.spills),
                                     fbb.CreateVector(c.shared_bytes)));
  std::vector<fbs::Offset<fb::Launch>> launches;
  for (const LaunchOut &l : k.launches) {
    std::vector<fbs::Offset<fb::GridDim>> grid;
    for (const GridDimOut &g : l.grid)
      grid.push_back(fb::CreateGridDim(fbb, fbb.CreateString(g.var), g.mul, g.div, g.add));
    std::vector<fbs::Offset<fb::KernelArg>> args;
    for (const KernelArgOut &a : l.args)
      args.push_back(fb::CreateKernelArg(fbb, (fb::ArgKind)a.kind, a.index, fbb.CreateString(a.name),
                                         a.i, a.f));
    fbs::Offset<fb::Gemm> gemm;
    if (l.gemm)
      gemm = fb::CreateGemm(fbb, l.gemm_x, l.gemm_w, l.gemm_bias, l.gemm_out);
    launches.push_back(fb::CreateLaunch(fbb, l.instr, l.kernel, fbb.CreateVector(grid), l.block,
                                        l.smem, fbb.CreateVector(args), gemm));
  }
  std::vector<fbs::Offset<fb::Workspace>> workspaces;
  for (const WorkspaceOut &w : k.workspaces)
    workspaces.push_back(fb::CreateWorkspace(fbb, fbb.CreateString(w.name), w.bytes_per_token, w.bytes_fixed));
  std::vector<int8_t> dtypes(k.value_dtypes.begin(), k.value_dtypes.end());
  return fb::CreateKernelBundle(
      fbb, fbb.CreateString(k.source), fbb.CreateVectorOfStrings(k.names), fbb.CreateVector(cubins),
      fbb.CreateString(k.ptx), fbb.CreateString(k.ptx_arch), fbb.CreateString(k.source_hash),
      fbb.CreateVector(launches), fbb.CreateVector(workspaces),
      fbb.CreateVector(reinterpret_cast<const fb::DType *>(dtypes.data()), dtypes.size()),
      k.argmax_kernel);
}

} // namespace

FailureOr<std::vector<uint8_t>> writeArtefact(ModuleOp module, const ArtefactInputs &inputs) {
  auto func = module.lookupSymbol<func::FuncOp>("step");
  if (!func)
    return module.emitError("module has no func.func @step");
  fbs::FlatBufferBuilder fbb(1 << 16);
  std::vector<fbs::Offset<fb::WeightEntry>> weights;
  auto program = writeProgram(fbb, module, func, weights);
  if (failed(program))
    return failure();
  auto plan = writeCachePlan(fbb, module);
  if (failed(plan))
    return failure();
  auto meta = writeMeta(fbb, module);
  if (failed(meta))
    return failure();
  auto weightsVec = fbb.CreateVector(weights);
  auto compiler = fbb.CreateString(inputs.compiler);
  auto config = fbb.CreateString(inputs.config_json);
  auto ir = fbb.CreateString(inputs.ir);
  fbs::Offset<fb::KernelBundle> kernels;
  if (inputs.kernels)
    kernels = writeKernels(fbb, *inputs.kernels);
  fb::ModelBuilder mb(fbb);
  mb.add_format_version(rt::kFormatVersion);
  mb.add_compiler(compiler);
  mb.add_config_json(config);
  mb.add_meta(*meta);
  mb.add_program(*program);
  mb.add_cache_plan(*plan);
  mb.add_weights(weightsVec);
  mb.add_ir(ir);
  if (inputs.kernels)
    mb.add_kernels(kernels);
  fbb.Finish(mb.Finish(), fb::ModelIdentifier());
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

} // namespace cbc::codegen
