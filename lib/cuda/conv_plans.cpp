// Choosing a convolution's graph-API plan on the device (cudnn_graph.h):
// the candidates of heuristics A, B and the fallback list, each plan that
// builds within the workspace limit timed on scratch memory aligned like the
// real tensors (kPlanSamples samples, the L2 cache written over before each,
// as the measured cost model does), the fastest by median kept.
#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "cost/plan_cache.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "cuda/cudnn_graph.h"
#include "cuda/program.h"

namespace ios::cuda {

float median_ms(std::vector<float> samples) {
  if (samples.empty()) return 0.0f;
  std::sort(samples.begin(), samples.end());
  const size_t mid = samples.size() / 2;
  return samples.size() % 2 == 1 ? samples[mid] : 0.5f * (samples[mid - 1] + samples[mid]);
}

std::optional<size_t> fastest_plan(const std::vector<std::vector<float>>& samples) {
  std::optional<size_t> best;
  float best_ms = 0.0f;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (samples[i].size() < static_cast<size_t>(kPlanSamples)) continue;
    const float ms = median_ms(samples[i]);
    if (!best || ms < best_ms) best = i, best_ms = ms;
  }
  return best;
}

BackendDescriptor make_variant_pack(const ConvGraphSpec& spec, const void* x, const void* w,
                                    void* y, const void* bias, const void* z, void* workspace) {
  std::vector<int64_t> uids{kUidX, kUidW, kUidY};
  std::vector<void*> pointers{const_cast<void*>(x), const_cast<void*>(w), y};
  if (spec.epilogue.bias) uids.push_back(kUidBias), pointers.push_back(const_cast<void*>(bias));
  if (spec.epilogue.residual) uids.push_back(kUidZ), pointers.push_back(const_cast<void*>(z));
  BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set_ints(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids, "variant pack ids");
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
           static_cast<int64_t>(pointers.size()), pointers.data(), "variant pack pointers");
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace,
           "variant pack workspace");
  pack.finalize("variant pack");
  return pack;
}

namespace {

// The plan of one form of the convolution (`spec`: with its epilogue, or
// bare), from the plan cache or by timing; null when none builds and runs.
std::shared_ptr<ConvPlanChoice> plan_for(Context& ctx, const ConvGraphSpec& spec,
                                         const ConvShape& shape, const std::string& label) {
  const std::string key = fmt::format("{}|ws{}", spec.key(), ctx.workspace_limit());
  auto log = logger("cuda");
  std::optional<ConvOperationGraph> graph;
  try {
    graph = build_conv_graph(spec, ctx.cudnn(0), label);
  } catch (const UserError& e) {
    log->debug("{}", e.what());
    return nullptr;
  }
  std::vector<EngineConfig> configs = candidate_configs(*graph, spec);
  if (configs.empty()) {
    log->debug("convolution '{}' ({}): cuDNN's heuristics return no engine configuration", label,
               spec.key());
    return nullptr;
  }
  // The plan cache: the configuration a process chose before on this GPU
  // and software, built without timing (when it is still a candidate and builds).
  std::optional<cost::PlanKey> cache_key;
  if (cost::PlanCache* cache = ctx.plan_cache()) {
    const DeviceSummary& d = ctx.device();
    cache_key = cost::PlanKey{
        d.name,  d.sm_count,           d.driver,
        d.cudnn, ctx.cublas_version(), exec::kernel_selection(exec::ConvKernels::kGraph),
        key};
    if (const auto entry = cache->find(*cache_key)) {
      for (EngineConfig& c : configs) {
        if (c.name() != entry->choice) continue;
        std::optional<ExecutionPlan> plan = build_plan(c, ctx.cudnn(0));
        if (!plan ||
            static_cast<size_t>(std::max<int64_t>(plan->workspace, 0)) > ctx.workspace_limit())
          break;
        auto choice = std::make_shared<ConvPlanChoice>();
        choice->spec = spec;
        choice->graph = std::move(*graph);
        choice->config = std::move(c);
        choice->plan = std::move(*plan);
        choice->time_ms = static_cast<float>(entry->time_ms);
        choice->from_cache = true;
        log->debug("convolution '{}': graph plan {} from the plan cache", label,
                   choice->config.name());
        return choice;
      }
      log->debug("convolution '{}': the plan cache's {} no longer builds; timing the candidates",
                 label, entry->choice);
    }
  }
  // After a refused execution: clear the error it may have left, and let a sticky one surface.
  auto clear_error = [&] {
    detail::clear_failed_attempt();
    IOS_CUDA_CALL(cudaStreamSynchronize(ctx.stream(0)));
  };
  const auto element_bytes = static_cast<size_t>(ir::bytes_of(shape.type));
  auto bytes = [&](int64_t elements) {
    return static_cast<size_t>(std::max<int64_t>(elements, 1)) * element_bytes;
  };
  auto aligned = [&](int slot, size_t size, int64_t alignment) {
    char* base = static_cast<char*>(ctx.scratch(slot, size + kBufferAlignment));
    return static_cast<void*>(base + alignment % kBufferAlignment);
  };
  const size_t limit = ctx.workspace_limit();
  void* x = aligned(0, bytes((shape.n - 1) * shape.x_batch_stride + shape.x_item()), shape.x_align);
  void* w = ctx.scratch(1, bytes(ir::num_elements(shape.w_dims())));
  void* y = aligned(2, bytes((shape.n - 1) * shape.y_batch_stride + shape.y_item()), shape.y_align);
  void* z =
      aligned(3, bytes(shape.has_z ? (shape.n - 1) * shape.z_batch_stride + shape.y_item() : 1),
              shape.z_align);
  void* bias = ctx.scratch(4, bytes(shape.k));
  void* ws = ctx.scratch(5, std::max<size_t>(limit, 1));
  int l2_bytes = 0;
  IOS_CUDA_CALL(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, ctx.ordinal()));
  const size_t flush_bytes =
      std::max<size_t>(size_t{2} * static_cast<size_t>(std::max(l2_bytes, 0)), size_t{1} << 20);
  void* flush = ctx.scratch(8, flush_bytes);
  const cudaStream_t stream = ctx.stream(0);
  Event start = make_event(true), stop = make_event(true);

  std::vector<std::pair<std::string, float>> tried;
  std::vector<std::vector<float>> samples;
  std::vector<size_t> timed;  // index into configs of each samples entry
  std::vector<ExecutionPlan> plans;
  uint8_t flush_byte = 0;
  for (size_t i = 0; i < configs.size() && static_cast<int>(plans.size()) < kMaxPlansTimed; ++i) {
    std::optional<ExecutionPlan> plan = build_plan(configs[i], ctx.cudnn(0));
    if (!plan || plan->workspace < 0 || static_cast<size_t>(plan->workspace) > limit) {
      clear_error();
      tried.emplace_back(configs[i].name(), -1.0f);
      continue;
    }
    const BackendDescriptor pack = make_variant_pack(spec, x, w, y, bias, z, ws);
    // One untimed run: a plan cuDNN refuses to execute is no candidate.
    if (cudnnBackendExecute(ctx.cudnn(0), plan->plan.get(), pack.get()) != CUDNN_STATUS_SUCCESS) {
      clear_error();
      tried.emplace_back(configs[i].name(), -1.0f);
      continue;
    }
    std::vector<float> times;
    bool ran = true;
    for (int s = 0; s < kPlanSamples && ran; ++s) {
      IOS_CUDA_CALL(cudaMemsetAsync(flush, ++flush_byte, flush_bytes, stream));
      IOS_CUDA_CALL(cudaEventRecord(start.get(), stream));
      ran = cudnnBackendExecute(ctx.cudnn(0), plan->plan.get(), pack.get()) == CUDNN_STATUS_SUCCESS;
      IOS_CUDA_CALL(cudaEventRecord(stop.get(), stream));
      IOS_CUDA_CALL(cudaEventSynchronize(stop.get()));
      float ms = 0.0f;
      IOS_CUDA_CALL(cudaEventElapsedTime(&ms, start.get(), stop.get()));
      times.push_back(ms);
    }
    if (!ran) {
      clear_error();
      tried.emplace_back(configs[i].name(), -1.0f);
      continue;
    }
    tried.emplace_back(configs[i].name(), median_ms(times));
    samples.push_back(std::move(times));
    timed.push_back(i);
    plans.push_back(std::move(*plan));
  }
  const std::optional<size_t> best = fastest_plan(samples);
  if (!best) {
    log->debug("convolution '{}' ({}): none of the {} engine configurations builds and runs a plan",
               label, spec.key(), configs.size());
    return nullptr;
  }
  auto choice = std::make_shared<ConvPlanChoice>();
  choice->spec = spec;
  choice->graph = std::move(*graph);
  choice->config = std::move(configs[timed[*best]]);
  choice->plan = std::move(plans[*best]);
  choice->time_ms = median_ms(samples[*best]);
  choice->candidates = std::move(tried);
  if (cache_key)
    ctx.plan_cache()->store(*cache_key, cost::PlanEntry{choice->config.name(), choice->time_ms, 0});
  log->debug("convolution '{}': graph plan {} ({} {}, ws {} KiB) {:.4f} ms, fastest of {} timed",
             label, choice->config.name(), heuristic_mode_name(choice->config.source),
             choice->config.runtime_compiled() ? "runtime-compiled" : "precompiled",
             choice->plan.workspace / 1024, choice->time_ms, samples.size());
  return choice;
}

}  // namespace

std::shared_ptr<const ConvPlanChoice> choose_conv_plan(Context& ctx, const ConvShape& shape,
                                                       const std::string& label) {
  const ConvGraphSpec spec = conv_graph_spec(shape, ctx.math());
  const std::string key = fmt::format("{}|ws{}", spec.key(), ctx.workspace_limit());
  if (auto it = ctx.conv_plans().find(key); it != ctx.conv_plans().end()) return it->second;
  std::shared_ptr<ConvPlanChoice> choice = plan_for(ctx, spec, shape, label);
  if (choice == nullptr && spec.epilogue.any()) {
    // No engine fuses this epilogue in this layout (cuDNN's runtime fusion
    // takes channels-last only: a residual add in NCHW has none): the bare
    // convolution's plan, and the epilogue as the own element-wise kernel
    // after it, as the legacy path runs an unfused call.
    ConvGraphSpec bare = spec;
    bare.epilogue = {};
    choice = plan_for(ctx, bare, shape, label);
    if (choice != nullptr) {
      choice->own_epilogue = true;
      logger("cuda")->debug(
          "convolution '{}': no plan fuses its epilogue; bare plan {} + own epilogue", label,
          choice->config.name());
    }
  }
  ctx.conv_plans()[key] = choice;
  return choice;
}

}  // namespace ios::cuda
