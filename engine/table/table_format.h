/* The index block's fixed fields, written by table_build.c and checked by
 * table_index.c; the whole format is drawn in uih/table.h. */
#ifndef UIH_TABLE_FORMAT_H
#define UIH_TABLE_FORMAT_H

#define UIH_TABLE_INDEX_MAGIC 0x49484955u /* "UIHI", little-endian */
#define UIH_TABLE_INDEX_VERSION 2         /* written; version 1 is read too */

#endif /* UIH_TABLE_FORMAT_H */
