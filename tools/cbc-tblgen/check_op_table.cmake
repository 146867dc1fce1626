# ctest op-table-is-current: the committed op table is what cbc-tblgen generates from the ODS now.
file(READ "${GENERATED}" generated)
file(READ "${COMMITTED}" committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "runtime/schema/ops.inc differs from the op table generated from "
    "dialects/cbc/CbcOps.td (${GENERATED}): run `ninja -C <build> cbc-update-op-table` and commit it")
endif()
