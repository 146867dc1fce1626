// The lowering's builder: emits the step one decoder layer at a time, naming every weight by
// its HF tensor names. The skeleton (arguments, embedding, the residual stream, the LM head and
// the model's metadata) is step.cpp; each mixer and feed-forward kind has a file of its own
// (attention.cpp, recurrent.cpp, ffn.cpp, shared_block.cpp), and the helpers they share are
// step_builder.cpp. Families differ only in the ModelSpec they fill: nothing here names one.
#ifndef CBC_FRONTENDS_HF_CONFIG_LOWER_STEP_BUILDER_H
#define CBC_FRONTENDS_HF_CONFIG_LOWER_STEP_BUILDER_H

#include "dialects/cbc/CbcOps.h"
#include "frontends/hf_config/lower/dialect_enums.h"
#include "frontends/hf_config/lower_to_cbc.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cbc::hf::lower {

using mlir::Value;

// How one program weight is assembled from checkpoint tensors, as cbc.weight.ref spells it.
struct WeightRef {
  std::vector<std::vector<std::string>> parts = {}; // each part: its tensors concatenated on dim 0
  bool stack = false;                               // the parts stack on a new leading dimension
  bool transpose = false;                           // each part's last two dimensions swap
  llvm::SmallVector<int64_t> regroup = {};          // rows regrouped: [groups, piece sizes...]
  int64_t block_diag = 0;                           // each part's blocks placed on a diagonal
  llvm::SmallVector<double> row_scales = {};        // [rows, factor] runs
  bool mxfp4 = false;                               // each part is an MXFP4 [blocks, scales] pair
  bool flatten = false;                             // sources as [rows, last dim], read in the shape
};

// Where an attention block's tensors are: the HF prefix of its module and the program-name
// prefix (both ending in '.'), its input width and, for shared blocks with adapters, this
// layer's adapter slot ("n.", empty for none).
struct AttnSite {
  std::string hf, prog;
  int64_t in = 0;
  std::string adapter_slot;
};

// A block selection restricting each query head to its selection head's listed blocks.
struct BlockSelection {
  Value blocks;                 // [T, heads * topk] from cbc.kv.block_select; none: every key
  int64_t heads = 0, block = 0; // selection heads, positions per block
};

// A convolution's per-token taps, lag order and output scale (cbc.state.conv1d).
struct ConvExtras {
  mlir::Value taps;
  bool lag_order = false;
  double scale = 1.0;
  int64_t dilation = 1;
};

class StepBuilder {
public:
  StepBuilder(const ModelSpec &spec, mlir::MLIRContext &ctx, const LowerOptions &options);
  mlir::OwningOpRef<mlir::ModuleOp> build();

private:
  // ---- the skeleton (step.cpp) ----
  mlir::func::FuncOp declareStep(mlir::ModuleOp module);
  Value embed(Value &table);
  Value absolutePositions(); // PositionEmbeddingSpec's rows for the step's positions
  Value decoderLayer(int64_t layer, Value x);
  Value decoderBlocks(int64_t layer, Value x); // the mixer and feed-forward blocks with their residuals
  double embedScale(double scale) const;
  double toWeightDtype(double value) const;
  void perLayerInputs();
  Value perLayerBranch(int64_t layer, Value x);
  Value layerEpilogue(int64_t layer, Value x);
  // AltUp's streams (altup.cpp).
  Value altUpStreams(Value embeddings);
  Value altUpLayer(int64_t layer, Value streams);
  Value altUpCollapse(Value streams);
  Value altUpModalities(int64_t layer, Value x);
  Value griffinBlock(int64_t layer, Value x); // recurrent.cpp
  Value mlstmLayer(int64_t layer, Value x);   // recurrent.cpp
  // RWKV's layers (rwkv.cpp).
  Value tokenMix(int64_t layer, Value shifted, Value diff, const std::string &module, const std::string &name);
  Value previousToken(int64_t layer, Value h, const std::string &state);
  Value rwkvOutput(int64_t layer, Value x, const std::string &name, int64_t in);
  Value rwkvTimeMix(int64_t layer, Value h);
  Value rwkvChannelMix(int64_t layer, Value h);
  Value rwkvLayer(int64_t layer, Value x);
  // Hyper-connections' streams (hyper.cpp).
  Value hyperStreams(Value embeddings);
  Value hyperWeights(Value streams, HcKind kind, const std::string &prog, const std::string &prefix);
  Value hyperBlock(int64_t layer, Value streams, const std::string &site, const std::string &prefix,
                   const std::function<Value(Value)> &block);
  Value hyperLayer(int64_t layer, Value streams);
  Value hyperHead(Value streams);
  // GatedResidual (HyperSpec::rank) and the hashed n-gram embeddings: gated_residual.cpp.
  Value gatedResidualLayer(int64_t layer, Value streams);
  Value gatedMix(Value streams, const std::string &prog, const std::string &prefix, Value *inject);
  Value ngramEmbeddings(int64_t layer, Value streams);
  BlockSelection qsaIndexer(int64_t layer, Value x, const AttnSite &site);
  Value projectedStream(Value x, Value ref, const std::string &projections, int64_t i);
  Value laurel(int64_t layer, Value x);
  std::vector<Value> perLayerSlices_; // PerLayerInputSpec's [T, dim] input of each layer
  Value dualSublayerLayer(int64_t layer, Value x);
  Value normedResidualLayer(int64_t layer, Value x);
  Value head(Value x, Value table);
  mlir::Attribute modelAttr();
  void declareFp8Weights(mlir::Block &step);
  Value recurrentStacks(Value embeddings);
  Value pairValueHeads(Value v, int64_t kvHeads, int64_t dim);
  Value differentialHeads(Value o, const AttnSite &site, int64_t dim, double lambdaInit);
  void quantizeLinearInputs(mlir::Block &step);
  Value mixer(int64_t layer, Value x);

  // ---- mixers and feed-forward blocks, one file per kind ----
  Value attention(int64_t layer, Value x) { return attention(layer, x, attnSite(layer)); }
  Value attention(int64_t layer, Value x, const AttnSite &site);
  Value qkvProjection(int64_t layer, Value x, const AttnSite &site);
  Value qkLayerNorm(Value x, const AttnSite &site, const std::string &module, int64_t heads, int64_t dim);
  Value cachedAttention(int64_t layer, const AttentionSpec &a, const AttnSite &site, Value q, Value k, Value v,
                        int64_t width, const BlockSelection &selection = {});
  // The lightning indexer's block selection of a block-sparse layer (BlockIndexerSpec).
  BlockSelection blockIndexer(int64_t layer, Value x, const AttnSite &site);
  Value transposeHeads(Value x, int64_t blocks, int64_t per, int64_t dim);
  Value headExpertsAttention(int64_t layer, Value x, const AttnSite &site);
  // Compressed convolutional attention (cca.cpp) and its head regroupings.
  Value ccaAttention(int64_t layer, Value x, const AttnSite &site);
  Value repeatHeads(Value x, int64_t heads, int64_t dim, int64_t times);
  Value meanHeads(Value x, int64_t heads, int64_t dim, int64_t group);
  // The attention spec with the layer's own head counts and width where it has them.
  AttentionSpec layerAttention(int64_t layer) const;
  // Attention with a relative-position bias from the hidden state (relative_attention.cpp).
  Value relativeAttention(int64_t layer, Value x, const AttnSite &site);
  Value relativeBias(const AttnSite &site, Value r, int64_t heads, int64_t extent);
  Value logPositionScale(Value x);
  // Block attention residuals and their clipped attention (block_residual.cpp).
  Value blockResidualLayers(Value embeddings);
  Value clippedAttention(int64_t layer, Value xq, Value xk, Value xv);
  llvm::SmallVector<Value> attendSources(Value stacked, const std::string &progName, const std::string &hfName,
                                         int64_t queries);
  Value blockResidualHead(Value stacked);
  Value scaledConv(int64_t layer, Value x, const std::string &hfName, const std::string &state,
                   const ConvExtras &extras, bool lagMajor);
  Value l2Clip(Value x, int64_t group, double threshold, Value scale = {});
  // h + depthwise_conv(h) with a per-request state `state`; `module` holds conv1d.weight.
  Value residualConv(int64_t layer, Value h, const std::string &module, const std::string &state);
  // offset: where the rotated features start in each head (the last ones: head width - rotary dim).
  Value rope(const RopeSpec &r, Value x, int64_t headDim = 0, std::optional<RotaryPairing> pairing = std::nullopt,
             int64_t offset = 0, bool inverse = false);
  // The schedule of such a rotation; `inverse` turns by -angle.
  RopeAttr ropeSchedule(const RopeSpec &r, int64_t headDim, std::optional<RotaryPairing> pairing, int64_t offset,
                        bool inverse);
  // Latent attention; `cacheLayer` is the cache layer it keeps (a decoder layer may hold two).
  Value latentAttention(int64_t layer, Value x) { return latentAttention(x, attnSite(layer), layer, layer); }
  Value latentAttention(Value x, const AttnSite &site, int64_t layer, int64_t cacheLayer);
  // *qResid receives the normed q_a (the indexer's input); with MlaSpec::query_gate, *gate the
  // per-element output gate [T, H * v_dim].
  Value latentQuery(int64_t layer, Value x, const AttnSite &site, Value *qResid = nullptr, Value *gate = nullptr);
  const MlaSpec &layerMla(int64_t layer) const;
  Value indexerSelection(Value x, Value qResid, const AttnSite &site, int64_t layer, int64_t cacheLayer);
  Value headPositionScale(Value x, const AttnSite &site, const std::string &name, int64_t heads);
  Value poolSelection(const IndexerSpec &ix, Value x, Value q, Value k, Value headWeights, const AttnSite &site,
                      int64_t cacheLayer);
  Value selection_; // the last indexed layer's selection, which shared-indexer layers reuse
  Value gatedDeltaNet(int64_t layer, Value x);
  Value lightningAttention(int64_t layer, Value x);
  Value kdaAttention(int64_t layer, Value x); // kda.cpp
  Value sharedKvAttention(int64_t layer, Value x); // shared_kv.cpp
  Value compressedEntries(int64_t layer, Value x, const AttnSite &site, const RopeSpec &rope, int64_t entriesLayer);
  Value entrySelection(int64_t layer, Value x, Value qResid, const AttnSite &site, const RopeSpec &rope,
                       int64_t entriesLayer);
  Value windowPool(Value x, Value ape, Value normW, int64_t rate, int64_t dim, const RopeSpec &rope,
                   int64_t stateLayer, const std::string &state);
  Value shortConv(int64_t layer, Value x);
  Value mamba2(int64_t layer, Value x) { return mamba2(layer, x, spec_.names.mamba); }
  Value mamba2(int64_t layer, Value x, const std::string &module);
  Value mamba1(int64_t layer, Value x) { return mamba1(layer, x, spec_.names.mamba); }
  Value mamba1(int64_t layer, Value x, const std::string &module);
  Value sharedBlock(int64_t layer, Value x);
  // The dense MLP; `module` names another MLP module of the layer than Names::mlp.
  Value denseMlp(int64_t layer, Value x, const std::string &module = "");
  Value moeMlp(int64_t layer, Value x);
  // RouterMlpSpec's router: its logits over `columns` choices.
  Value routerMlp(int64_t layer, Value x, int64_t columns);
  Value routerState_; // the last MoE layer's RouterMlpSpec state r, which the next one adds in
  // (f + fb) * fs + (x + xb) * xs with the vectors of <layer>.<site> (Names::affine_mixer/mlp).
  Value affineResidual(int64_t layer, const std::string &site, Value x, Value f);
  Value sharedExpert(int64_t layer, Value x);
  // Routed experts with sink experts in one normalisation (MoeSpec::sinks).
  Value sinkMoeMlp(int64_t layer, Value x);

  // ---- types, weights and names (step_builder.cpp) ----
  mlir::RankedTensorType rows(int64_t width);
  mlir::RankedTensorType rowsI32(int64_t width);
  Value weight(const std::string &name, llvm::ArrayRef<int64_t> shape, const WeightRef &ref);
  Value weight(const std::string &name, llvm::ArrayRef<int64_t> shape, const std::string &hfName) {
    return weight(name, shape, WeightRef{.parts = {{hfName}}});
  }
  // Small parameters transformers reads in fp32 whatever the model dtype.
  Value fp32Weight(const std::string &name, llvm::ArrayRef<int64_t> shape, const WeightRef &ref);
  Value fp32Weight(const std::string &name, llvm::ArrayRef<int64_t> shape, const std::string &hfName) {
    return fp32Weight(name, shape, WeightRef{.parts = {{hfName}}});
  }
  // [rows, factor] runs for a weight's row_scales; none when every factor is 1.
  static llvm::SmallVector<double> scales(std::initializer_list<std::pair<int64_t, double>> runs);
  std::string layerModule(int64_t layer) const;
  std::string hf(int64_t layer, const std::string &rest) const;
  std::string mlpName(int64_t layer, const std::string &rest) const;
  std::string prog(int64_t layer, const std::string &rest) const;
  AttnSite attnSite(int64_t layer) const;

  // ---- ops ----
  ActivationAttr actAttr(Activation a);
  // A gated unit's activation: a plain one, or the clamped form with its limit and alpha.
  mlir::Attribute gluAct(FfnActivation a, double limit = 0, double alpha = 0, double upOffset = 1);
  Value glu(Value x, int64_t width, mlir::Attribute act, GluLayout layout = GluLayout::halves);
  Value norm(Value x, Value w, std::optional<int64_t> group = std::nullopt, std::optional<double> eps = std::nullopt);
  Value layerNorm(int64_t layer, const std::string &hfName, Value x);
  // One of the decoder's own norms (ModelSpec::norm_kind) over hidden_size: weight <hf>.weight,
  // bias <hf>.bias, as the spec says.
  Value modelNorm(const std::string &progName, const std::string &hf, Value x) {
    return modelNorm(progName, hf, x, spec_.norm_eps);
  }
  Value modelNorm(const std::string &progName, const std::string &hf, Value x, double eps);
  // layerNorm, or with `gated` the NormGateSpec norm and its low-rank sigmoid gate.
  Value layerNorm(int64_t layer, const std::string &hfName, Value x, bool gated);
  Value linear(Value x, Value w, Value bias = {});
  Value conv1d(int64_t layer, Value x, Value w, Value bias, Activation act, llvm::StringRef state = "conv",
               bool residual = false, Value initial = {}, const ConvExtras &extras = {});
  Value act(Value x, Activation kind);
  // xIELU with its parameters alpha_p, alpha_n, beta and eps at <hfPrefix><name>.
  Value xielu(Value x, const std::string &progPrefix, const std::string &hfPrefix);
  // x times a constant: cbc.math.act with no activation (the dialect has no scale op).
  Value scaleBy(Value x, double factor);
  llvm::SmallVector<Value> split(Value x, llvm::ArrayRef<int64_t> widths);
  Value mul(Value x, Value g);
  Value add(Value a, Value b);

  const ModelSpec &spec_;
  std::map<std::string, Value> weights_; // program weights by name
  Value embeddings_;                     // the embedding rows (shared blocks read them)
  mlir::OpBuilder b_;
  mlir::Location loc_;
  mlir::Type wtype_;
  // step arguments
  Value tokens_, positions_, seqIds_, cuSeqlens_, kvLens_, blockTables_, logitRows_, promptLens_, slots_,
      hasInitial_, stateIn_, stateOut_, injectRows_, injectEmbeds_, ropePositions_, keyEnds_;
};

} // namespace cbc::hf::lower

#endif
