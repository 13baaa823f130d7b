/* The value types' table (types.h) and the public lookups over it. */
#include "types.h"

const uih_type_info uih_types[UIH_TYPE_TABLE] = {
    [UIH_TYPE_TIMESTAMP] = {"timestamp", 8, UIH_ENC_PLAIN | UIH_ENC_DELTA | UIH_ENC_DELTA2 | UIH_ENC_FOR},
    [UIH_TYPE_ID] = {"id", 8,
                     UIH_ENC_PLAIN | UIH_ENC_DELTA | UIH_ENC_FOR | UIH_ENC_DICT | UIH_ENC_RLE | UIH_ENC_SPARSE |
                         UIH_ENC_SHARED | UIH_ENC_CODED},
    [UIH_TYPE_INT64] = {"int64", 8,
                        UIH_ENC_PLAIN | UIH_ENC_DELTA | UIH_ENC_DELTA2 | UIH_ENC_FOR | UIH_ENC_DICT |
                            UIH_ENC_RLE | UIH_ENC_SPARSE | UIH_ENC_SHARED | UIH_ENC_CODED},
    [UIH_TYPE_UINT32] = {"uint32", 4,
                         UIH_ENC_PLAIN | UIH_ENC_DELTA | UIH_ENC_FOR | UIH_ENC_DICT | UIH_ENC_RLE |
                             UIH_ENC_SPARSE | UIH_ENC_SHARED | UIH_ENC_CODED},
    [UIH_TYPE_FLOAT32] = {"float32", 4, UIH_ENC_PLAIN | UIH_ENC_BSS | UIH_ENC_DICT | UIH_ENC_SPARSE},
    [UIH_TYPE_CATEGORY] = {"category", 4,
                           UIH_ENC_PLAIN | UIH_ENC_FOR | UIH_ENC_DICT | UIH_ENC_RLE | UIH_ENC_SPARSE |
                               UIH_ENC_SHARED | UIH_ENC_CODED},
    [UIH_TYPE_FLAG] = {"flag", 1, UIH_ENC_PLAIN | UIH_ENC_RLE | UIH_ENC_SPARSE},
};

size_t uih_type_width(uih_type type) { return uih_type_info_of(type)->width; }
const char *uih_type_name(uih_type type) { return uih_type_info_of(type)->name; }
uint32_t uih_encodings_for_type(uih_type type) { return uih_type_info_of(type)->encodings; }
