// summarize_adapter(): reads and validates an adapter folder and fills the AdapterSummary the catalog
// and the UI keep (identity, PEFT config summary, size, and the signature of the files the digest was
// taken from, so a cached digest can be trusted later). The type itself is model/adapter_folder.h.
#pragma once

#include <string>

#include "model/adapter_folder.h"

namespace loradesk::lora {

// The summary type and the folder signature live below the catalog (model/adapter_folder.h); lora fills them.
using model::AdapterSummary;
using model::folder_signature;

// Reads adapter_config.json and adapter_model.safetensors in `dir`, validates them as PEFT LoRA
// (fails closed with Error on anything we cannot apply exactly) and hashes them. The signature is
// taken before and after reading; a folder that changes meanwhile is read again (a few times, then
// ExpectedError(unavailable)), so summary.signature always describes the hashed content.
AdapterSummary summarize_adapter(const std::string& dir);

}  // namespace loradesk::lora
