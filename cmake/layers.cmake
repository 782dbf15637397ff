# Layers: one static library per folder of server/ (and of tests/support), each compiled with the
# include roots of itself and of the layers it links, and of nothing else. A layer's include root
# is a directory in the build tree holding one symbolic link, named like the folder, to the
# folder: so `#include "rpc/worker_session.h"` resolves only for a target that links ckpt_rpc, and
# an include against the direction of the graph fails to compile ("No such file or directory")
# instead of quietly tying two layers into one. tests/layering checks that it does.
#
# ckpt_layer(<target> <folder> SOURCES <file>... [PUBLIC <dep>...] [PRIVATE <dep>...])
#   <folder>: relative to the current source directory; also the include prefix.
#   SOURCES: the layer's .cc files, relative to <folder>, listed one by one (no globs: a new file
#   is a change to this list, seen in review).
#   PUBLIC: layers (and libraries) the layer's headers include; PRIVATE: those only its .cc do.
function(ckpt_layer target folder)
  cmake_parse_arguments(PARSE_ARGV 2 LAYER "" "" "SOURCES;PUBLIC;PRIVATE")
  if(NOT LAYER_SOURCES)
    message(FATAL_ERROR "ckpt_layer(${target}): no SOURCES")
  endif()
  set(root ${CMAKE_BINARY_DIR}/include_roots/${target})
  get_filename_component(link_parent ${root}/${folder} DIRECTORY)
  file(MAKE_DIRECTORY ${link_parent})
  file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR}/${folder} ${root}/${folder} SYMBOLIC)
  list(TRANSFORM LAYER_SOURCES PREPEND ${folder}/)
  add_library(${target} STATIC ${LAYER_SOURCES})
  target_include_directories(${target} PUBLIC ${root})
  target_link_libraries(${target} PUBLIC ${LAYER_PUBLIC} PRIVATE ${LAYER_PRIVATE})
endfunction()
