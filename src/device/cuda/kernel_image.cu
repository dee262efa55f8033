// kernel_image.cu — does this build have kernels the visible GPU can run? A build for other CUDA
// architectures (sm_90a only, on an sm_80 GPU) would fail at its first launch with "no kernel
// image is available"; kvcheck says so before anything runs, and the GPU tests skip with it.
#include <string>

#include <cuda_runtime.h>

namespace kv {

namespace {
__global__ void kernel_image_probe() {}
}  // namespace

std::string cuda_kernel_image_missing() {
  cudaFuncAttributes attributes{};
  const cudaError_t e = cudaFuncGetAttributes(&attributes, kernel_image_probe);
  if (e == cudaSuccess) return "";
  (void)cudaGetLastError();
  int device = 0;
  cudaDeviceProp p{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&p, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("the GPU cannot run this build's kernels (") + cudaGetErrorString(e) + ")";
  }
  return std::string("this kvcheck has no kernels for the GPU ") + p.name + " (sm_" +
         std::to_string(p.major) + std::to_string(p.minor) + ": " + cudaGetErrorString(e) +
         "); rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(p.major) +
         std::to_string(p.minor);
}

}  // namespace kv
