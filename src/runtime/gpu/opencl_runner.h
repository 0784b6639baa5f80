// Running OpenCL kernels through loom-opencl-runner (see opencl_protocol.h
// for why they run in a child process). One child per process, started on
// first use and restarted if it dies; calls are serialized.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/gpu/gpu_call.h"

namespace loom {

// Runs the call's launches in order. Returns the device ("cpu <name>" or "gpu <name>"). UserError when no
// runner or OpenCL device exists; InternalError when the source does not build.
std::string run_opencl(const std::string& source, const GpuCall& call);

// Whether a runner program and an OpenCL device are present (a probe run, cached).
bool opencl_available(std::string* why = nullptr);

}  // namespace loom
