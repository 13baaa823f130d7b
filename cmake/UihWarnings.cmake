# Warnings for uihstore's own targets. Third-party headers (RocksDB's internal
# tree, googletest) come in as SYSTEM includes so their warnings stay theirs.
function(uih_target_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wshadow -Wpointer-arith -Wformat=2 -Wundef
    $<$<COMPILE_LANGUAGE:C>:-Wstrict-prototypes -Wmissing-prototypes>
    $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor -Woverloaded-virtual>)
  if(UIH_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
