// The backends ios-run knows, by name (exec/backend.h). Built in: cuda (the
// default), cpu and sim, one line each in registry.cpp. register_backend()
// adds one at run time, for a program that links its own (the tests' echo
// backend does).
#pragma once

#include <string>
#include <vector>

#include "exec/backend.h"

namespace ios::backends {

// Every registered backend, the built-in ones first.
const std::vector<exec::BackendEntry>& all();

// The backend named `name`; UserError listing the names otherwise.
const exec::BackendEntry& find(const std::string& name);

// "cuda, cpu, sim".
std::string names();

// Adds a backend; a name already registered is an InternalError.
void register_backend(exec::BackendEntry entry);

}  // namespace ios::backends
