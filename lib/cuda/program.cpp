// The Program's own bookkeeping (program.h): scratch values, the users of
// each buffer for the memory plan, and the human-readable listing. The
// lowering that builds a Program is in lowering.h.
#include "cuda/program.h"

#include <algorithm>
#include <sstream>
#include <variant>

#include "core/error.h"

namespace ios::cuda {

int Program::add_temp(const std::string& name, const ir::Shape& shape) {
  Buffer buffer;
  buffer.name = name;
  buffer.elements = ir::num_elements(shape);
  buffers.push_back(buffer);
  Value value;
  value.name = name;
  value.shape = shape;
  value.buffer = static_cast<int>(buffers.size() - 1);
  value.batch_stride = value.item_size();
  values.push_back(value);
  return static_cast<int>(values.size() - 1);
}

namespace {

// The values an operation reads or writes.
void op_values(const Op& op, std::vector<int>& out) {
  auto add = [&](int v) {
    if (v >= 0) out.push_back(v);
  };
  auto add_ref = [&](const Ref& r) {
    if (r.is_value()) out.push_back(r.index);
  };
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, ConvOp>) {
          add(o.x), add(o.y), add(o.z), add(o.x_dense), add(o.y_dense);
        } else if constexpr (std::is_same_v<T, EwOp>) {
          add_ref(o.x), add(o.y);
          for (const EwStep& s : o.steps) add_ref(s.operand);
        } else if constexpr (std::is_same_v<T, GemmOp>) {
          add_ref(o.a), add_ref(o.b), add_ref(o.c), add(o.y);
        } else if constexpr (std::is_same_v<T, CopyOp>) {
          add(o.src), add(o.dst);
        } else {
          add(o.x), add(o.y);
        }
      },
      op);
}

}  // namespace

std::vector<exec::MemoryRequest> Program::memory_requests() const {
  const std::vector<std::vector<int>> users = buffer_users();
  std::vector<exec::MemoryRequest> requests(buffers.size());
  for (size_t b = 0; b < buffers.size(); ++b) {
    requests[b] = {buffers[b].elements * static_cast<int64_t>(sizeof(float)), buffers[b].persistent, users[b]};
  }
  return requests;
}

std::vector<std::vector<int>> Program::buffer_users() const {
  std::vector<std::vector<int>> users(buffers.size());
  std::vector<int> vals;
  for (size_t l = 0; l < launches.size(); ++l) {
    vals.clear();
    for (const Op& op : launches[l].ops) op_values(op, vals);
    for (int v : vals) {
      auto& u = users.at(static_cast<size_t>(values.at(static_cast<size_t>(v)).buffer));
      if (u.empty() || u.back() != static_cast<int>(l)) u.push_back(static_cast<int>(l));
    }
  }
  for (auto& u : users) {
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
  }
  return users;
}

int Program::num_ops() const {
  int n = 0;
  for (const Launch& l : launches) n += static_cast<int>(l.ops.size());
  return n;
}

std::string describe_program(const Program& p) {
  std::ostringstream out;
  auto vname = [&](int v) { return v < 0 ? std::string("-") : p.values.at(static_cast<size_t>(v)).name; };
  auto rname = [&](const Ref& r) {
    if (r.is_value()) return vname(r.index);
    if (r.is_constant()) return "const " + p.constants.at(static_cast<size_t>(r.index)).name;
    return std::string("-");
  };
  for (size_t l = 0; l < p.launches.size(); ++l) {
    const Launch& launch = p.launches[l];
    out << "launch " << l << " [stream " << launch.stream << "] " << (launch.merged ? "merged " : "") << launch.name
        << '\n';
    for (const Op& op : launch.ops) {
      out << "    ";
      std::visit(
          [&](const auto& o) {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, ConvOp>) {
              out << "conv " << o.kernel[0] << 'x' << o.kernel[1] << "/s" << o.stride[0] << " g" << o.group << ' '
                  << vname(o.x) << " -> " << vname(o.y) << (o.fused ? " (cuDNN bias" : "")
                  << (o.fused && o.z >= 0 ? " + " + vname(o.z) : "") << (o.fused ? " + relu)" : "");
            } else if constexpr (std::is_same_v<T, EwOp>) {
              out << "elementwise[" << o.steps.size() << "] " << rname(o.x) << " -> " << vname(o.y);
            } else if constexpr (std::is_same_v<T, PoolOp>) {
              out << (o.mode == PoolOp::Mode::kMax ? "maxpool " : "avgpool ") << o.kernel[0] << 'x' << o.kernel[1]
                  << (o.use_cudnn ? " (cuDNN) " : " (own) ") << vname(o.x) << " -> " << vname(o.y);
            } else if constexpr (std::is_same_v<T, SoftmaxOp>) {
              out << "softmax axis " << o.axis << ' ' << vname(o.x) << " -> " << vname(o.y);
            } else if constexpr (std::is_same_v<T, GemmOp>) {
              out << "gemm " << o.batch << 'x' << o.m << 'x' << o.n << 'x' << o.k << ' ' << rname(o.a) << " * "
                  << rname(o.b) << " -> " << vname(o.y);
            } else if constexpr (std::is_same_v<T, CopyOp>) {
              out << "copy " << vname(o.src) << " -> " << vname(o.dst);
            } else if constexpr (std::is_same_v<T, PadOp>) {
              out << "pad " << vname(o.x) << " -> " << vname(o.y);
            } else if constexpr (std::is_same_v<T, ResizeOp>) {
              out << (o.attrs.mode == ir::resize::Mode::kLinear ? "resize linear " : "resize nearest ")
                  << vname(o.x) << " -> " << vname(o.y);
            } else if constexpr (std::is_same_v<T, LayerNormOp>) {
              out << "layer-norm axis " << o.axis << ' ' << vname(o.x) << " * " << rname(o.scale)
                  << (o.bias ? " + " + rname(o.bias) : std::string()) << " -> " << vname(o.y);
            } else {
              out << "reduce-mean " << vname(o.x) << " -> " << vname(o.y);
            }
          },
          op);
      out << '\n';
    }
  }
  return out.str();
}

}  // namespace ios::cuda
