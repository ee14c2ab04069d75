// The ONNX operator schemas every run of ONNX's shape inference in ios uses
// (the importer's and the opset adapter's): ONNX's own, with Einsum's
// inference made safe and complete, and Conv's and ConvTranspose's made safe.
#pragma once

#include <onnx/defs/schema.h>

#include <map>
#include <string>

namespace ios::onnx {

// ONNX's schemas, except for shape inference:
// - Einsum's also gives the output's dimensions (ONNX 1.12 gives only its
//   rank), from the plan ios lowers it with: without them every tensor after
//   an attention's Einsum would wait a round of shape inference per Einsum;
// - ONNX's Einsum rank inference runs only on equations it can read: in the
//   implicit form it counts letters by `c - 'a'`, so an uppercase letter
//   (valid ONNX) writes outside its array;
// - Conv's and ConvTranspose's first refuse weights whose rank differs from
//   the input's (ONNX 1.12 reads past an array on them).
class ImportSchemas final : public ::onnx::ISchemaRegistry {
 public:
  const ::onnx::OpSchema* GetSchema(const std::string& key, int max_inclusive_version,
                                    const std::string& domain) const override;

 private:
  mutable std::map<const ::onnx::OpSchema*, ::onnx::OpSchema> wrapped_;  // by ONNX's schema
};

// True when ONNX 1.12's Einsum rank inference reads `equation` within
// bounds: the explicit form ("...->..."), or an implicit one of lowercase
// letters, commas, dots and spaces.
bool onnx_einsum_inference_safe(const std::string& equation);

}  // namespace ios::onnx
