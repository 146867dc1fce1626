//===- CbcBase.td - the cbc dialect, its op class and type constraints -*- tablegen -*-===//
//
// cbc lowers a Hugging Face config into one "step": a function that advances a packed batch
// of requests by one scheduling step. The cache, the per-request states and the packed-row
// bookkeeping are explicit ops here rather than hidden inside attention wrappers.
//
//===----------------------------------------------------------------------------------===//

#ifndef CBC_BASE_TD
#define CBC_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Cbc_Dialect : Dialect {
  let name = "cbc";
  let summary = "Continuous-batching step programs for language models.";
  let description = [{
    The `cbc` dialect describes one scheduling step of a language model serving many requests
    at once. Activations are packed rows `tensor<?xFxf32>`: the dynamic dimension is the number
    of tokens in the step (or the number of requests for per-request values). The step computes
    in f32; `cbc-assign-device-types` then gives every value the element type the device holds
    it in (bf16, f16 or f32), and an op whose operands and result differ converts as it reads
    and writes. Weights may carry their quantised storage format (`#cbc.quant`). Batch metadata
    (token ids, positions, `cu_seqlens`, request slots, block tables and logit rows) enters as
    explicit operands of the step function.

    Ops are grouped by what they do: `cbc.weight.*` names checkpoint tensors, `cbc.math.*` is
    dense math, `cbc.kv.*` reads and writes the paged cache, `cbc.state.*` scans per-request
    states, `cbc.rows.*` gathers packed rows and `cbc.moe.*` routes tokens to experts. Closed
    sets (activations, layouts, pairings, scores, retention) are enum attributes, and parameter
    bundles (a RoPE schedule, the cache plan) are attributes with typed fields and verifiers.
  }];
  let cppNamespace = "::cbc";
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

// Where an instruction keeps data across steps, which the loader checks against the cache plan:
// nowhere, in its layer's paged cache (its parameter table starts with `site: CacheSite`), or in
// a per-request state (its table starts with `state: StateSite`).
class Cbc_SiteKind<string kindName> { string name = kindName; }
def Cbc_NoSite : Cbc_SiteKind<"None">;
def Cbc_CacheSite : Cbc_SiteKind<"Cache">;
def Cbc_StateSite : Cbc_SiteKind<"State">;

// Every op but cbc.weight.ref is an instruction of the artefact. These fields are its entry in
// the op table that cbc-tblgen generates (runtime/schema/ops.inc), from which the opcode names,
// the loader's operand counts and site checks, `cbc dump` and the CPU dispatch are expanded.
class Cbc_Op<string mnemonic, list<Trait> traits = []> :
    Op<Cbc_Dialect, mnemonic, traits> {
  // The instruction's `Opcode` in runtime/schema/model.fbs, whose enumerator is the def's name
  // without `Cbc_` and `Op`. Stored in artefacts: never renumbered. -1: not an instruction.
  int opcode = -1;
  // Its parameter table in model.fbs's `OpParams`; empty: the op has none.
  string params = "";
  Cbc_SiteKind site = Cbc_NoSite;
  // The weight operands the op multiplies as matrices ([N, K], or stacked [E, N, K]), which a
  // backend may keep in the format its matrix products read fastest.
  list<string> matrices = [];
}

class Cbc_Attr<string name, string attrMnemonic, list<Trait> traits = []> :
    AttrDef<Cbc_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

// Packed rows: a rank-2 float tensor whose leading (row) dimension is dynamic. The step's
// semantics are f32; cbc-assign-device-types gives each value the type the device holds it in.
def Cbc_Rows : Type<And<[
    CPred<"::llvm::isa<::mlir::RankedTensorType>($_self)">,
    CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).getRank() == 2">,
    CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).isDynamicDim(0)">,
    CPred<"!::llvm::cast<::mlir::RankedTensorType>($_self).isDynamicDim(1)">,
    CPred<"!::llvm::cast<::mlir::RankedTensorType>($_self).getEncoding()">,
    CPred<"::llvm::isa<::mlir::Float32Type, ::mlir::BFloat16Type, ::mlir::Float16Type>("
          "::llvm::cast<::mlir::RankedTensorType>($_self).getElementType())">]>,
    "packed rows (tensor<?xNxf32>, bf16 or f16)">;

// Packed int32 rows (a router's expert ids).
def Cbc_RowsI32 : Type<And<[
    CPred<"::llvm::isa<::mlir::RankedTensorType>($_self)">,
    CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).getRank() == 2">,
    CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).isDynamicDim(0)">,
    CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).getElementType().isInteger(32)">]>,
    "packed int32 rows (tensor<?xNxi32>)">;

// Per-token or per-request int32 metadata: tensor<?xi32>.
def Cbc_Index : Type<And<[
    CPred<"::llvm::isa<::mlir::RankedTensorType>($_self)">,
    CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).getRank() == 1">,
    CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).getElementType().isInteger(32)">]>,
    "int32 vector (tensor<?xi32>)">;

// Block tables: tensor<groups x requests x blocks x i32>.
def Cbc_BlockTables : Type<And<[
    CPred<"::llvm::isa<::mlir::RankedTensorType>($_self)">,
    CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).getRank() == 3">,
    CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).getElementType().isInteger(32)">]>,
    "block tables (tensor<?x?x?xi32>)">;

// A variadic list of at least one value: cbc-tblgen's op table reads `minSize` as the list's
// least operand (or result) count, which the op's verifier also requires.
class Cbc_NonEmpty<Type type> : Variadic<type> { let minSize = 1; }

// A checkpoint tensor of static shape, plain or with its quantised storage format.
def Cbc_Weight : Type<And<[
    CPred<"::llvm::isa<::mlir::RankedTensorType>($_self)">,
    CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).hasStaticShape()">,
    CPred<"!::llvm::cast<::mlir::RankedTensorType>($_self).getEncoding() || "
          "::llvm::isa<::cbc::QuantAttr>(::llvm::cast<::mlir::RankedTensorType>($_self).getEncoding())">]>,
    "statically shaped weight tensor (plain or #cbc.quant)">;

#endif // CBC_BASE_TD
