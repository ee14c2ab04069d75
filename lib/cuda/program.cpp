// The Program's own bookkeeping (program.h): scratch values, the users of
// each buffer for the memory plan (what its operations declare they use),
// and the human-readable listing. The
// lowering that builds a Program is in lowering.h.
#include "cuda/program.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace ios::cuda {

int Program::add_scratch(const std::string& name, const ir::Shape& shape, ir::ElementType type) {
  Buffer buffer;
  buffer.name = name;
  buffer.elements = ir::num_elements(shape);
  buffer.type = type;
  buffers.push_back(buffer);
  Value value;
  value.name = name;
  value.shape = shape;
  value.buffer = static_cast<int>(buffers.size() - 1);
  value.type = type;
  value.batch_stride = value.item_size();
  values.push_back(value);
  return static_cast<int>(values.size() - 1);
}

std::string Program::value_name(int v) const {
  return v < 0 ? std::string("-") : values.at(static_cast<size_t>(v)).name;
}

std::string Program::ref_name(const Ref& r) const {
  if (r.is_value()) return value_name(r.index);
  if (r.is_constant()) return "const " + constants.at(static_cast<size_t>(r.index)).name;
  return "-";
}

std::vector<exec::MemoryRequest> Program::memory_requests() const {
  const std::vector<std::vector<int>> users = buffer_users();
  std::vector<exec::MemoryRequest> requests(buffers.size());
  for (size_t b = 0; b < buffers.size(); ++b) {
    requests[b] = {buffers[b].bytes(), buffers[b].persistent, users[b]};
  }
  return requests;
}

std::vector<std::vector<int>> Program::buffer_users() const {
  std::vector<std::vector<int>> users(buffers.size());
  for (size_t l = 0; l < launches.size(); ++l) {
    Uses uses;
    for (const std::unique_ptr<Operation>& op : launches[l].ops) op->uses(uses);
    uses.reads.insert(uses.reads.end(), uses.writes.begin(), uses.writes.end());
    for (int v : uses.reads) {
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
  for (size_t l = 0; l < p.launches.size(); ++l) {
    const Launch& launch = p.launches[l];
    out << "launch " << l << " [stream " << launch.stream << "] " << (launch.merged ? "merged " : "") << launch.name
        << '\n';
    for (const std::unique_ptr<Operation>& op : launch.ops) out << "    " << op->describe(p) << '\n';
  }
  return out.str();
}

}  // namespace ios::cuda
