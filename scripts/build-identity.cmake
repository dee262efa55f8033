# build-identity.cmake — writes the build's identity (src/report/version.h) as a C++ file, at every
# build: the git commit of the source tree and whether it had uncommitted changes (tracked files),
# with the version, build type and CUDA toolkit the configure step chose. The file is rewritten
# only when its text changes, so an unchanged tree rebuilds nothing.
#   cmake -DSRC_DIR=... -DOUT=... -DVERSION=... -DBUILD_TYPE=... -DCUDA_VERSION=... \
#         -DCUDA_ARCHS=... -P build-identity.cmake
set(commit "unknown")
set(dirty "false")
find_program(GIT git)
if(GIT)
  execute_process(COMMAND ${GIT} -C ${SRC_DIR} rev-parse --verify HEAD
                  OUTPUT_VARIABLE head RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET)
  if(rc EQUAL 0 AND head MATCHES "^[0-9a-f]+$")
    set(commit ${head})
    execute_process(COMMAND ${GIT} -C ${SRC_DIR} status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes RESULT_VARIABLE rc ERROR_QUIET)
    if(NOT rc EQUAL 0 OR NOT changes STREQUAL "")
      set(dirty "true")
    endif()
  endif()
endif()
if(NOT BUILD_TYPE)
  set(BUILD_TYPE "none")
endif()
file(WRITE ${OUT}.new
"// Generated at build time by scripts/build-identity.cmake: do not edit.
#include \"report/version.h\"

namespace kv {

const BuildIdentity& build_identity() {
  static const BuildIdentity id{\"${VERSION}\", \"${commit}\", ${dirty}, \"${BUILD_TYPE}\",
                                \"${CUDA_VERSION}\", \"${CUDA_ARCHS}\"};
  return id;
}

}  // namespace kv
")
file(COPY_FILE ${OUT}.new ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.new)
