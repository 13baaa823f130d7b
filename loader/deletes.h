/* The loader's deletions (uih load --delete FILE): who and what to erase
 * from the whole history, read from a CSV file (plain, .gz or .zst):
 *
 *   user_id            erase these users: every event, every group
 *   42
 *
 *   item_id            scrub these items: every event whose trait item_id
 *   981                has this value, in every group that has the trait
 *
 *   user_id,item_id    (user, item) pairs; in this form an empty field is
 *   42,981             "any": "42," erases user 42, ",981" scrubs item 981
 *   42,
 *   ,981
 *
 * The trait column names an active trait of type id of at least one group.
 * Errors name the file, line and column and what was expected. A list is
 * immutable once read and may be shared by threads.
 */
#ifndef UIH_LOADER_DELETES_H
#define UIH_LOADER_DELETES_H

#include <stdint.h>
#include <stdio.h>

#include "uih/error.h"
#include "uih/schema.h"

typedef struct ld_deletes ld_deletes;

/* Reads the list from `f` (not closed), called `name` in messages. */
int ld_deletes_read(FILE *f, const char *name, const uih_schema *schema, ld_deletes **out, uih_error *err);
void ld_deletes_free(ld_deletes *d); /* NULL is fine */

/* XXH3-64 of the list's meaning (its sorted entries), 0 for NULL. */
uint64_t ld_deletes_digest(const ld_deletes *d);
/* Entries: users erased, items scrubbed, pairs. */
void ld_deletes_counts(const ld_deletes *d, uint64_t *users, uint64_t *items, uint64_t *pairs);

/* The users erased, ascending. */
const uint64_t *ld_deletes_users(const ld_deletes *d, size_t *n);
/* 1 when every event of `user` goes (NULL list: 0). */
int ld_deletes_user(const ld_deletes *d, uint64_t user);
/* The trait whose values decide which of `user`'s events in group `g` go
 * (items scrubbed, or pairs of this user), or NULL when none of them can
 * be deleted by value. */
const uih_trait *ld_deletes_trait(const ld_deletes *d, const uih_group *g, uint64_t user);
/* 1 when `user`'s event with value `item` of that trait goes. */
int ld_deletes_event(const ld_deletes *d, uint64_t user, uint64_t item);

#endif /* UIH_LOADER_DELETES_H */
