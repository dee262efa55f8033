#!/bin/sh
# kvcheck_gpu_test.sh COMMAND... — runs COMMAND on the GPU ctest allocated to the test
# (RESOURCE_GROUPS "gpus:1" and a --resource-spec-file): CTEST_RESOURCE_GROUP_0_GPUS is
# "id:N,slots:1"; CUDA_VISIBLE_DEVICES=N makes it the only one the command sees. Without a
# resource spec, the command sees every GPU.
if [ -n "${CTEST_RESOURCE_GROUP_0_GPUS:-}" ]; then
  id=${CTEST_RESOURCE_GROUP_0_GPUS#id:}
  CUDA_VISIBLE_DEVICES=${id%%,*}
  export CUDA_VISIBLE_DEVICES
fi
exec "$@"
