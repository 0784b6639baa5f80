// loom-opencl-runner: runs the OpenCL kernels loom sends over stdin and
// answers over stdout (see opencl_protocol.h). Links only the OpenCL ICD
// loader: never loom or LLVM. Programs are built once per source.
#include <CL/cl.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/gpu/opencl_protocol.h"

namespace {

namespace p = loom::opencl_protocol;

struct Device {
  cl_device_id id = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  std::string description;
};

std::string device_text(cl_device_id d) {
  char name[256] = {0};
  cl_device_type type = 0;
  clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof name - 1, name, nullptr);
  clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
  return std::string(type & CL_DEVICE_TYPE_CPU ? "cpu" : type & CL_DEVICE_TYPE_GPU ? "gpu" : "other") + " " + name;
}

std::string open_device(Device& dev) {
  cl_uint platforms = 0;
  if (clGetPlatformIDs(0, nullptr, &platforms) != CL_SUCCESS || platforms == 0)
    return "no OpenCL platform (install pocl-opencl-icd)";
  std::vector<cl_platform_id> ids(platforms);
  clGetPlatformIDs(platforms, ids.data(), nullptr);
  for (cl_platform_id pid : ids) {
    if (clGetDeviceIDs(pid, CL_DEVICE_TYPE_ALL, 1, &dev.id, nullptr) != CL_SUCCESS) continue;
    cl_int err = 0;
    dev.context = clCreateContext(nullptr, 1, &dev.id, nullptr, nullptr, &err);
    if (err != CL_SUCCESS) continue;
    dev.queue = clCreateCommandQueue(dev.context, dev.id, 0, &err);
    if (err != CL_SUCCESS) continue;
    dev.description = device_text(dev.id);
    return "";
  }
  return "no usable OpenCL device";
}

struct Buffer {
  uint64_t bytes = 0;
  std::string data;
  bool download = false;
  cl_mem mem = nullptr;
};

struct Launch {
  std::string name;
  uint64_t grid = 0;
  uint32_t threads = 1;
};

// Runs one request; returns an error message, empty on success.
std::string run(Device& dev, std::map<std::string, cl_program>& programs, const std::string& source,
                std::vector<Buffer>& buffers, const std::vector<int64_t>& sizes, const std::vector<Launch>& launches) {
  cl_int err = 0;
  cl_program& program = programs[source];
  if (!program) {
    const char* text = source.c_str();
    program = clCreateProgramWithSource(dev.context, 1, &text, nullptr, &err);
    if (clBuildProgram(program, 1, &dev.id, "", nullptr, nullptr) != CL_SUCCESS) {
      size_t n = 0;
      clGetProgramBuildInfo(program, dev.id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
      std::string log(n, '\0');
      clGetProgramBuildInfo(program, dev.id, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
      clReleaseProgram(program);
      programs.erase(source);
      return "OpenCL build failed:\n" + log;
    }
  }
  for (Buffer& b : buffers) {
    const size_t bytes = b.bytes ? b.bytes : 4;
    b.mem = clCreateBuffer(dev.context, CL_MEM_READ_WRITE, bytes, nullptr, &err);
    if (err != CL_SUCCESS)
      return "clCreateBuffer of " + std::to_string(bytes) + " bytes failed: OpenCL error " + std::to_string(err);
    if (!b.data.empty() &&
        clEnqueueWriteBuffer(dev.queue, b.mem, CL_TRUE, 0, b.data.size(), b.data.data(), 0, nullptr, nullptr))
      return "clEnqueueWriteBuffer failed";
  }
  for (const Launch& l : launches) {
    cl_kernel k = clCreateKernel(program, l.name.c_str(), &err);
    if (err != CL_SUCCESS) return "no kernel '" + l.name + "' in the program";
    cl_uint arg = 0;
    for (Buffer& b : buffers) clSetKernelArg(k, arg++, sizeof(cl_mem), &b.mem);
    for (int64_t s : sizes) {
      cl_long v = s;
      clSetKernelArg(k, arg++, sizeof v, &v);
    }
    const size_t global = size_t(l.grid) * l.threads, local = l.threads;
    err = l.grid ? clEnqueueNDRangeKernel(dev.queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr) : CL_SUCCESS;
    clReleaseKernel(k);
    if (err != CL_SUCCESS) return "launch of '" + l.name + "' failed: OpenCL error " + std::to_string(err);
  }
  if (clFinish(dev.queue) != CL_SUCCESS) return "clFinish failed";
  for (Buffer& b : buffers)
    if (b.download) {
      b.data.resize(b.bytes);
      if (clEnqueueReadBuffer(dev.queue, b.mem, CL_TRUE, 0, b.bytes, b.data.data(), 0, nullptr, nullptr))
        return "clEnqueueReadBuffer failed";
    }
  return "";
}

bool serve(Device& dev, const std::string& device_error, std::map<std::string, cl_program>& programs) {
  const int in = 0, out = 1;
  uint32_t magic = 0;
  if (!p::get(in, magic) || magic != p::kMagic) return false;
  std::string source;
  uint32_t nbuf = 0, nsizes = 0, nlaunch = 0;
  if (!p::get_string(in, source, p::kMaxBytes) || !p::get(in, nbuf)) return false;
  std::vector<Buffer> buffers(nbuf);
  for (Buffer& b : buffers) {
    uint8_t upload = 0, download = 0;
    if (!p::get(in, b.bytes) || !p::get(in, upload) || b.bytes > p::kMaxBytes) return false;
    if (upload) {
      b.data.resize(b.bytes);
      if (!p::read_all(in, b.data.data(), b.bytes)) return false;
    }
    if (!p::get(in, download)) return false;
    b.download = download != 0;
  }
  if (!p::get(in, nsizes)) return false;
  std::vector<int64_t> sizes(nsizes);
  for (int64_t& s : sizes)
    if (!p::get(in, s)) return false;
  if (!p::get(in, nlaunch)) return false;
  std::vector<Launch> launches(nlaunch);
  for (Launch& l : launches)
    if (!p::get_string(in, l.name, 4096) || !p::get(in, l.grid) || !p::get(in, l.threads)) return false;

  std::string error = device_error.empty() ? run(dev, programs, source, buffers, sizes, launches) : device_error;
  for (Buffer& b : buffers)
    if (b.mem) clReleaseMemObject(b.mem);
  if (!p::put<uint8_t>(out, error.empty()) || !p::put_string(out, error.empty() ? dev.description : error))
    return false;
  if (error.empty())
    for (const Buffer& b : buffers)
      if (b.download && !p::write_all(out, b.data.data(), b.data.size())) return false;
  return true;
}

}  // namespace

int main() {
  Device dev;
  const std::string device_error = open_device(dev);
  std::map<std::string, cl_program> programs;
  while (serve(dev, device_error, programs)) {
  }
  return 0;
}
