#include "src/export/onnx_export.h"

#include <ATen/PadNd.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/torch.h>

#include <functional>
#include <limits>
#include <set>
#include <tuple>
#include <unordered_map>

#include "fastnn/errors.h"

namespace fastnn::exporter {
namespace {
using torch::jit::Node;
using torch::jit::Value;

// The traced batch, whatever the exported one (a fixed batch is only the
// declared size of the input and the output: tracing at it once allocated
// its activations, ~100 GB for a batch of a million): a size no other
// leading dimension of these networks has, so a Reshape's batch entry is
// told apart from its other entries.
constexpr int64_t kTracedBatch = 3;

class Converter {
 public:
  Converter(onnx::GraphProto* graph, std::string model_name, int64_t traced_batch)
      : graph_(graph), model_name_(std::move(model_name)), traced_batch_(traced_batch) {}

  // Initializer names for the network's variables, by storage address.
  void name_variables(models::ClassifierImpl& model) {
    for (const auto& v : models::model_variables(model)) {
      variable_names_[v.tensor.data_ptr()] = {v.name, v.tensor.sizes().vec()};
    }
  }

  void set_name(const Value* v, const std::string& name) { names_[v] = name; }

  void convert(Node* n) {
    const std::string kind = n->kind().toQualString();
    if (kind == "prim::Constant" || kind == "prim::ListConstruct") return;  // read by users
    const auto it = ops().find(kind);
    if (it == ops().end()) unmapped(kind, "");
    it->second(*this, n);
  }

 private:
  using Op = std::function<void(Converter&, Node*)>;

  [[noreturn]] void unmapped(const std::string& kind, const std::string& why) const {
    throw ConfigError("export_inference_graph: " + model_name_ + ": the op " + kind +
                      " has no ONNX mapping" + (why.empty() ? "" : " (" + why + ")") +
                      "; nothing written");
  }

  // --- values -------------------------------------------------------------

  c10::IValue constant(const Value* v, const Node* user) const {
    auto iv = torch::jit::toIValue(v);
    if (!iv) unmapped(user->kind().toQualString(), "an argument that is not a constant");
    return *iv;
  }
  int64_t int_arg(const Node* n, size_t i) const { return constant(n->input(i), n).toInt(); }
  double double_arg(const Node* n, size_t i) const {
    return constant(n->input(i), n).toScalar().toDouble();
  }
  bool bool_arg(const Node* n, size_t i) const { return constant(n->input(i), n).toBool(); }
  bool is_none(const Node* n, size_t i) const {
    auto iv = torch::jit::toIValue(n->input(i));
    return iv && iv->isNone();
  }
  std::vector<int64_t> ints_arg(const Node* n, size_t i) const {
    return constant(n->input(i), n).toIntVector();
  }

  static std::vector<int64_t> sizes_of(const Value* v) {
    const auto t = v->type()->cast<c10::TensorType>();
    const auto s = t ? t->sizes().concrete_sizes() : c10::nullopt;
    return s ? *s : std::vector<int64_t>{};
  }
  int64_t rank_of(const Node* n, const Value* v) const {
    const auto s = sizes_of(v);
    if (s.empty()) unmapped(n->kind().toQualString(), "a tensor of unknown rank");
    return static_cast<int64_t>(s.size());
  }

  std::string fresh(const std::string& stem) { return stem + "_" + std::to_string(counter_++); }

  // The ONNX name of a tensor input: a value computed by an earlier node,
  // or a constant (a weight, or a number) written as an initializer.
  std::string input(const Node* user, size_t i) {
    const Value* v = user->input(i);
    if (auto it = names_.find(v); it != names_.end()) return it->second;
    const c10::IValue iv = constant(v, user);
    std::string name;
    if (iv.isTensor()) {
      name = tensor_initializer(iv.toTensor());
    } else if (iv.isDouble() || iv.isInt()) {
      name =
          initializer(fresh("scalar"), torch::tensor(static_cast<float>(iv.toScalar().toDouble())));
    } else {
      unmapped(user->kind().toQualString(), "an input of type " + iv.tagKind());
    }
    names_[v] = name;
    return name;
  }

  std::string tensor_initializer(const torch::Tensor& t) {
    const auto key = std::make_tuple(t.data_ptr(), t.sizes().vec(), t.strides().vec());
    if (auto it = tensor_names_.find(key); it != tensor_names_.end()) return it->second;
    std::string name;
    if (auto v = variable_names_.find(t.data_ptr());
        v != variable_names_.end() && v->second.second == t.sizes().vec() && t.is_contiguous() &&
        !used_names_.count(v->second.first)) {
      name = v->second.first;
    } else {
      name = fresh("const");
    }
    tensor_names_[key] = name;
    return initializer(name, t);
  }

  std::string initializer(const std::string& name, const torch::Tensor& value) {
    const torch::Tensor t = value.detach().contiguous().cpu();
    onnx::TensorProto* p = graph_->add_initializer();
    p->set_name(name);
    for (const int64_t d : t.sizes()) p->add_dims(d);
    if (t.scalar_type() == torch::kFloat) {
      p->set_data_type(onnx::TensorProto::FLOAT);
    } else if (t.scalar_type() == torch::kLong) {
      p->set_data_type(onnx::TensorProto::INT64);
    } else {
      throw ConfigError("export_inference_graph: " + model_name_ + ": a constant of type " +
                        std::string(c10::toString(t.scalar_type())) + " has no ONNX mapping");
    }
    p->set_raw_data(t.data_ptr(), static_cast<size_t>(t.nbytes()));
    used_names_.insert(name);
    return name;
  }
  std::string ints_initializer(const std::vector<int64_t>& values) {
    return initializer(fresh("ints"), torch::tensor(values, torch::kLong));
  }
  std::string float_initializer(double value) {
    return initializer(fresh("scalar"), torch::tensor(static_cast<float>(value)));
  }

  // --- nodes --------------------------------------------------------------

  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs,
                        const Value* output) {
    onnx::NodeProto* p = graph_->add_node();
    p->set_op_type(op);
    p->set_name(fresh(op));
    for (const auto& in : inputs) p->add_input(in);
    auto it = names_.find(output);
    const std::string out = it != names_.end() ? it->second : fresh(op);
    names_[output] = out;
    p->add_output(out);
    return p;
  }
  static void attr(onnx::NodeProto* p, const std::string& name, int64_t value) {
    auto* a = p->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }
  static void attr(onnx::NodeProto* p, const std::string& name, double value) {
    auto* a = p->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(value));
  }
  static void attr(onnx::NodeProto* p, const std::string& name,
                   const std::vector<int64_t>& values) {
    auto* a = p->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (const int64_t v : values) a->add_ints(v);
  }

  // An op that returns its input: the output takes the input's name,
  // unless it is the graph's output, which needs a node of its own.
  void alias(const Node* n) {
    const Value* out = n->output();
    if (names_.count(out)) {
      node("Identity", {input(n, 0)}, out);
    } else {
      names_[out] = input(n, 0);
    }
  }

  static std::vector<int64_t> twice(const std::vector<int64_t>& pads) {
    std::vector<int64_t> r = pads;
    r.insert(r.end(), pads.begin(), pads.end());
    return r;
  }
  // A pooling/convolution list given as one value for every spatial axis.
  static std::vector<int64_t> expand(std::vector<int64_t> v, size_t n) {
    if (v.size() == 1) v.assign(n, v[0]);
    return v;
  }

  // aten::_convolution(input, weight, bias?, stride, padding, dilation,
  //                    transposed, output_padding, groups, ...)
  void conv(Node* n) {
    if (bool_arg(n, 6)) unmapped("aten::_convolution", "transposed");
    const auto w = sizes_of(n->input(1));
    if (w.size() < 3) unmapped("aten::_convolution", "a weight of unknown shape");
    const size_t spatial = w.size() - 2;
    std::vector<std::string> in{input(n, 0), input(n, 1)};
    if (!is_none(n, 2)) in.push_back(input(n, 2));
    auto* p = node("Conv", in, n->output());
    attr(p, "kernel_shape", std::vector<int64_t>(w.begin() + 2, w.end()));
    attr(p, "strides", expand(ints_arg(n, 3), spatial));
    attr(p, "pads", twice(expand(ints_arg(n, 4), spatial)));
    attr(p, "dilations", expand(ints_arg(n, 5), spatial));
    attr(p, "group", int_arg(n, 8));
  }

  // aten::batch_norm(input, weight?, bias?, mean, var, training, momentum,
  //                  eps, cudnn_enabled)
  void batch_norm(Node* n) {
    if (bool_arg(n, 5)) unmapped("aten::batch_norm", "training mode");
    const auto mean = sizes_of(n->input(3));
    if (mean.size() != 1) unmapped("aten::batch_norm", "statistics of unknown shape");
    const std::string scale =
        is_none(n, 1) ? initializer(fresh("ones"), torch::ones({mean[0]})) : input(n, 1);
    const std::string bias =
        is_none(n, 2) ? initializer(fresh("zeros"), torch::zeros({mean[0]})) : input(n, 2);
    auto* p = node("BatchNormalization", {input(n, 0), scale, bias, input(n, 3), input(n, 4)},
                   n->output());
    attr(p, "epsilon", double_arg(n, 7));
  }

  // aten::max_pool2d(input, kernel, stride, padding, dilation, ceil_mode)
  void max_pool(Node* n) {
    const auto k = expand(ints_arg(n, 1), 2);
    auto s = ints_arg(n, 2);
    auto* p = node("MaxPool", {input(n, 0)}, n->output());
    attr(p, "kernel_shape", k);
    attr(p, "strides", s.empty() ? k : expand(s, 2));
    attr(p, "pads", twice(expand(ints_arg(n, 3), 2)));
    attr(p, "dilations", expand(ints_arg(n, 4), 2));
    attr(p, "ceil_mode", static_cast<int64_t>(bool_arg(n, 5)));
  }

  // aten::avg_pool{2,3}d(input, kernel, stride, padding, ceil_mode,
  //                      count_include_pad, divisor_override?)
  void avg_pool(Node* n, size_t spatial) {
    if (!is_none(n, 6)) unmapped(n->kind().toQualString(), "divisor_override");
    const auto k = expand(ints_arg(n, 1), spatial);
    auto s = ints_arg(n, 2);
    auto* p = node("AveragePool", {input(n, 0)}, n->output());
    attr(p, "kernel_shape", k);
    attr(p, "strides", s.empty() ? k : expand(s, spatial));
    attr(p, "pads", twice(expand(ints_arg(n, 3), spatial)));
    attr(p, "ceil_mode", static_cast<int64_t>(bool_arg(n, 4)));
    attr(p, "count_include_pad", static_cast<int64_t>(bool_arg(n, 5)));
  }

  // aten::constant_pad_nd(input, pad, value): LibTorch's pads run from the
  // last axis backwards (begin, end); ONNX's are all begins, then all ends.
  void pad(Node* n, double value) {
    const auto torch_pads = ints_arg(n, 1);
    const int64_t rank = rank_of(n, n->input(0));
    std::vector<int64_t> pads(static_cast<size_t>(2 * rank), 0);
    for (size_t i = 0; i + 1 < torch_pads.size(); i += 2) {
      const int64_t axis = rank - 1 - static_cast<int64_t>(i / 2);
      pads[static_cast<size_t>(axis)] = torch_pads[i];
      pads[static_cast<size_t>(axis + rank)] = torch_pads[i + 1];
    }
    auto* p =
        node("Pad", {input(n, 0), ints_initializer(pads), float_initializer(value)}, n->output());
    auto* a = p->add_attribute();
    a->set_name("mode");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s("constant");
  }

  // A binary op on tensors or a tensor and a number (aten::add's alpha 1).
  void binary(Node* n, const std::string& op) {
    if (n->inputs().size() > 2 && n->kind().toQualString() == std::string("aten::add") &&
        double_arg(n, 2) != 1.0) {
      unmapped("aten::add", "alpha != 1");
    }
    if (n->inputs().size() > 2 && n->kind().toQualString() != std::string("aten::add")) {
      unmapped(n->kind().toQualString(), "a rounding mode");
    }
    node(op, {input(n, 0), input(n, 1)}, n->output());
  }

  int64_t axis(const Node* n, int64_t dim, const Value* of) const {
    return dim < 0 ? dim + rank_of(n, of) : dim;
  }

  void cat(Node* n) {
    const Node* list = n->input(0)->node();
    if (list->kind().toQualString() != std::string("prim::ListConstruct")) {
      unmapped("aten::cat", "a list that is not built in the graph");
    }
    std::vector<std::string> in;
    for (size_t i = 0; i < list->inputs().size(); ++i) in.push_back(input(list, i));
    auto* p = node("Concat", in, n->output());
    attr(p, "axis", axis(n, int_arg(n, 1), n->output()));
  }

  // A reshape to sizes fixed at trace time; its batch entry becomes 0
  // (ONNX: keep the input's size), the exported batch being fixed or not.
  void reshape(Node* n, std::vector<int64_t> shape) {
    const auto in = sizes_of(n->input(0));
    if (!shape.empty() && !in.empty() && in[0] == traced_batch_ && shape[0] == traced_batch_) {
      shape[0] = 0;
    }
    node("Reshape", {input(n, 0), ints_initializer(shape)}, n->output());
  }

  // aten::flatten(input, start_dim, end_dim)
  void flatten(Node* n) {
    const int64_t rank = rank_of(n, n->input(0));
    const int64_t start = axis(n, int_arg(n, 1), n->input(0));
    const int64_t end = axis(n, int_arg(n, 2), n->input(0));
    if (start == 1 && end == rank - 1) {
      auto* p = node("Flatten", {input(n, 0)}, n->output());
      attr(p, "axis", start);
      return;
    }
    reshape(n, sizes_of(n->output()));
  }

  // aten::slice(input, dim, start?, end?, step)
  void slice(Node* n) {
    const int64_t start = is_none(n, 2) ? 0 : int_arg(n, 2);
    const int64_t end = is_none(n, 3) ? std::numeric_limits<int64_t>::max() : int_arg(n, 3);
    node("Slice",
         {input(n, 0), ints_initializer({start}), ints_initializer({end}),
          ints_initializer({axis(n, int_arg(n, 1), n->input(0))}),
          ints_initializer({int_arg(n, 4)})},
         n->output());
  }

  void squeeze(Node* n, const std::string& op) {
    if (n->inputs().size() < 2) unmapped(n->kind().toQualString(), "no axis");
    const Value* ref = op == "Squeeze" ? n->input(0) : n->output();
    node(op, {input(n, 0), ints_initializer({axis(n, int_arg(n, 1), ref)})}, n->output());
  }

  // aten::mean(input, dims, keepdim, dtype?)
  void mean(Node* n) {
    if (n->inputs().size() < 3) unmapped("aten::mean", "over every axis");
    std::vector<int64_t> axes;
    for (const int64_t d : ints_arg(n, 1)) axes.push_back(axis(n, d, n->input(0)));
    auto* p = node("ReduceMean", {input(n, 0)}, n->output());
    attr(p, "axes", axes);
    attr(p, "keepdims", static_cast<int64_t>(bool_arg(n, 2)));
  }

  // aten::addmm(bias, a, b, beta, alpha) = beta * bias + alpha * a @ b
  void addmm(Node* n) {
    auto* p = node("Gemm", {input(n, 1), input(n, 2), input(n, 0)}, n->output());
    attr(p, "beta", double_arg(n, 3));
    attr(p, "alpha", double_arg(n, 4));
  }

  // aten::clamp(input, min?, max?); "" skips an optional ONNX input.
  void clamp(Node* n) {
    node("Clip",
         {input(n, 0), is_none(n, 1) ? "" : float_initializer(double_arg(n, 1)),
          is_none(n, 2) ? "" : float_initializer(double_arg(n, 2))},
         n->output());
  }

  static const std::unordered_map<std::string, Op>& ops() {
    static const std::unordered_map<std::string, Op> table = {
        {"aten::_convolution", [](Converter& converter, Node* node) { converter.conv(node); }},
        {"aten::batch_norm", [](Converter& converter, Node* node) { converter.batch_norm(node); }},
        {"aten::relu",
         [](Converter& converter, Node* node) {
           converter.node("Relu", {converter.input(node, 0)}, node->output());
         }},
        {"aten::clamp", [](Converter& converter, Node* node) { converter.clamp(node); }},
        {"aten::max_pool2d", [](Converter& converter, Node* node) { converter.max_pool(node); }},
        {"aten::avg_pool2d", [](Converter& converter, Node* node) { converter.avg_pool(node, 2); }},
        {"aten::avg_pool3d", [](Converter& converter, Node* node) { converter.avg_pool(node, 3); }},
        {"aten::constant_pad_nd",
         [](Converter& converter, Node* node) {
           converter.pad(node, converter.double_arg(node, 2));
         }},
        // F::pad's enum form (local_response_norm): at::padding_mode.
        {"aten::_pad_enum",
         [](Converter& converter, Node* node) {
           if (converter.int_arg(node, 2) != static_cast<int64_t>(at::padding_mode::constant))
             converter.unmapped("aten::_pad_enum", "a mode other than constant");
           converter.pad(node, converter.is_none(node, 3) ? 0.0 : converter.double_arg(node, 3));
         }},
        {"aten::add", [](Converter& converter, Node* node) { converter.binary(node, "Add"); }},
        {"aten::mul", [](Converter& converter, Node* node) { converter.binary(node, "Mul"); }},
        {"aten::div", [](Converter& converter, Node* node) { converter.binary(node, "Div"); }},
        {"aten::pow", [](Converter& converter, Node* node) { converter.binary(node, "Pow"); }},
        {"aten::cat", [](Converter& converter, Node* node) { converter.cat(node); }},
        {"aten::flatten", [](Converter& converter, Node* node) { converter.flatten(node); }},
        {"aten::view", [](Converter& converter,
                          Node* node) { converter.reshape(node, converter.ints_arg(node, 1)); }},
        {"aten::reshape", [](Converter& converter,
                             Node* node) { converter.reshape(node, converter.ints_arg(node, 1)); }},
        {"aten::permute",
         [](Converter& converter, Node* node) {
           auto* transpose =
               converter.node("Transpose", {converter.input(node, 0)}, node->output());
           std::vector<int64_t> perm;
           for (const int64_t dim : converter.ints_arg(node, 1))
             perm.push_back(converter.axis(node, dim, node->input(0)));
           attr(transpose, "perm", perm);
         }},
        {"aten::slice", [](Converter& converter, Node* node) { converter.slice(node); }},
        {"aten::squeeze",
         [](Converter& converter, Node* node) { converter.squeeze(node, "Squeeze"); }},
        {"aten::unsqueeze",
         [](Converter& converter, Node* node) { converter.squeeze(node, "Unsqueeze"); }},
        {"aten::mean", [](Converter& converter, Node* node) { converter.mean(node); }},
        {"aten::addmm", [](Converter& converter, Node* node) { converter.addmm(node); }},
        {"aten::matmul",
         [](Converter& converter, Node* node) {
           converter.node("MatMul", {converter.input(node, 0), converter.input(node, 1)},
                          node->output());
         }},
        {"aten::dropout",
         [](Converter& converter, Node* node) {
           if (converter.bool_arg(node, 2)) converter.unmapped("aten::dropout", "training mode");
           converter.alias(node);
         }},
        {"aten::contiguous", [](Converter& converter, Node* node) { converter.alias(node); }},
        {"aten::detach", [](Converter& converter, Node* node) { converter.alias(node); }},
    };
    return table;
  }

  onnx::GraphProto* graph_;
  std::string model_name_;
  int64_t traced_batch_;
  int counter_ = 0;
  std::unordered_map<const Value*, std::string> names_;
  std::map<std::tuple<void*, std::vector<int64_t>, std::vector<int64_t>>, std::string>
      tensor_names_;
  std::map<void*, std::pair<std::string, std::vector<int64_t>>> variable_names_;
  std::set<std::string> used_names_;
};

// A value's declared type: float, `dims` with the batch (the first) "N"
// when `batch` is 0, else `batch`.
void tensor_type(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims,
                 int64_t batch) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (size_t i = 0; i < dims.size(); ++i) {
    auto* d = t->mutable_shape()->add_dim();
    if (i == 0 && batch == 0) {
      d->set_dim_param("N");
    } else {
      d->set_dim_value(i == 0 ? batch : dims[i]);
    }
  }
}

}  // namespace

std::string export_onnx(models::ClassifierImpl& model, const OnnxExportOptions& options) {
  const int64_t batch = kTracedBatch;
  model.eval();
  for (auto& param : model.parameters()) param.requires_grad_(false);
  torch::NoGradGuard no_grad;
  const torch::Tensor images =
      torch::zeros({batch, options.channels, options.image_size, options.image_size});
  auto traced = torch::jit::tracer::trace(
      {images},
      [&model](torch::jit::Stack in) {
        return torch::jit::Stack{model.forward(in[0].toTensor()).logits};
      },
      [](const torch::autograd::Variable&) { return std::string(); },
      /*strict=*/false);
  std::shared_ptr<torch::jit::Graph> graph = traced.first->graph;
  torch::jit::Inline(*graph);
  torch::jit::ConstantPropagation(graph);
  torch::jit::EliminateDeadCode(graph);
  if (graph->inputs().size() != 1 || graph->outputs().size() != 1) {
    throw std::runtime_error("export_inference_graph: the trace has " +
                             std::to_string(graph->inputs().size()) + " inputs and " +
                             std::to_string(graph->outputs().size()) + " outputs, not 1 and 1");
  }
  const torch::Tensor logits = traced.second.at(0).toTensor();
  if (logits.dim() != 2 || logits.size(0) != batch) {
    throw ConfigError("export_inference_graph: " + options.model_name + " gives logits of shape " +
                      c10::str(logits.sizes()) + " at image size " +
                      std::to_string(options.image_size) +
                      ", not [batch, classes]: a size this network does not take");
  }

  onnx::ModelProto proto;
  proto.set_ir_version(onnx::IR_VERSION);
  proto.set_producer_name("fastnn export_inference_graph");
  proto.set_producer_version(FASTNN_VERSION);
  proto.set_model_version(1);
  auto* opset = proto.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxOpset);
  for (const auto& [key, value] : options.metadata) {
    auto* prop = proto.add_metadata_props();
    prop->set_key(key);
    prop->set_value(value);
  }
  onnx::GraphProto* graph_proto = proto.mutable_graph();
  graph_proto->set_name(options.model_name.empty() ? "network" : options.model_name);
  tensor_type(graph_proto->add_input(), "images", images.sizes().vec(), options.batch_size);
  tensor_type(graph_proto->add_output(), "logits", logits.sizes().vec(), options.batch_size);

  Converter converter(graph_proto, options.model_name, batch);
  converter.name_variables(model);
  converter.set_name(graph->inputs()[0], "images");
  converter.set_name(graph->outputs()[0], "logits");
  for (Node* node : graph->nodes()) converter.convert(node);
  onnx::checker::check_model(proto);
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) {
    throw std::runtime_error("export_inference_graph: the ONNX model does not serialize");
  }
  return bytes;
}

}  // namespace fastnn::exporter
