// How a schema says inputs spell values (uih/schema.h: "user_ids", an id
// trait's "input", a timestamp's "unit" and "input"), read by the CSV
// reader: string ids hashed as uih_hash_id hashes them, two strings with
// one id refused naming both, times in s/ms/us converted exactly or
// refused, RFC 3339 date-times against glibc's timegm over random
// instants, offsets and fractions, and the edge cases each by its message.
#include <gtest/gtest.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "uih/csv.h"
#include "uih/key.h"
#include "values.h"

namespace {

std::string Schema(const std::string& ts, const std::string& user_ids = "", int version = 1,
                   const std::string& item_input = R"(, "input": "string")") {
  return R"({"name": "s", "version": )" + std::to_string(version) + user_ids +
         R"(, "groups": [{"name": "g", "id": 1, "traits": [{"name": "ts", "id": 1, "type": "timestamp")" + ts +
         R"(}, {"name": "item", "id": 2, "type": "id")" + item_input + R"(}]}]})";
}

uih_schema* Parse(const std::string& json, uih_error* err) {
  uih_schema* s = nullptr;
  return uih_schema_parse(json.data(), json.size(), "s.json", &s, err) == UIH_OK ? s : nullptr;
}

struct Row {
  uint64_t user;
  bool has_ts, has_item;
  int64_t ts;
  uint64_t item;
};

// Reads `text` under `schema` (with `ids` as the load's check); the first
// error's code, its message in *err.
int ReadAll(const uih_schema* schema, const std::string& text, std::vector<Row>* rows, uih_error* err,
            uih_id_check* ids = nullptr) {
  FILE* f = fmemopen(const_cast<char*>(text.data()), text.size(), "r");
  uih_csv_reader* r = nullptr;
  *err = uih_error{};
  int rc = uih_csv_open_stream(f, "day.csv", schema, &r, err);
  if (rc == UIH_OK) uih_csv_check_ids(r, ids);
  while (rc == UIH_OK) {
    uint64_t user;
    const uih_batch* ev;
    rc = uih_csv_next(r, &user, &ev, err);
    if (rc != UIH_OK || !ev) break;
    const int ts = uih_batch_column_index(ev, 1), item = uih_batch_column_index(ev, 2);
    if (rows)
      rows->push_back({user, uih_column_has(&ev->columns[ts], 0) != 0, uih_column_has(&ev->columns[item], 0) != 0,
                       static_cast<int64_t>(uih_column_get_bits(&ev->columns[ts], 0)),
                       uih_column_get_bits(&ev->columns[item], 0)});
  }
  uih_csv_close(r);
  fclose(f);
  return rc;
}

uint64_t H(const std::string& s) { return uih_hash_id(s.data(), s.size()); }

// Numbers are read as strtoull and strtoll read them (a short run of
// digits is read in place, values.c): on random spellings — digits of 1
// to 22 places, leading zeros, signs, spaces and other characters
// around them — the same value or the same refusal as those functions,
// for unsigned and signed traits.
TEST(SpelledInput, NumbersReadAsStrtoullAndStrtollReadThem) {
  uih_error err{};
  uih_schema* schema = Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "traits": [
      {"name": "ts", "id": 1, "type": "timestamp"}, {"name": "d", "id": 2, "type": "int64"}]}]})",
                             &err);
  ASSERT_NE(schema, nullptr) << uih_error_message(&err);
  const uih_trait* i64 = uih_group_trait_by_name(uih_schema_group_by_id(schema, 1), "d");
  std::mt19937_64 rng(23);
  uint64_t taken = 0;
  for (int i = 0; i < 200000; i++) {
    std::string text;
    if (rng() % 8 == 0) text += "+- 0x"[rng() % 5];
    if (rng() % 3 == 0) text += std::string(rng() % 4, '0');
    const int places = 1 + static_cast<int>(rng() % 22);
    for (int k = 0; k < places; k++) text += static_cast<char>('0' + rng() % 10);
    if (rng() % 10 == 0) text += " x9"[rng() % 3];
    // The reference: the C library's own reading, whole and in range.
    char* end = nullptr;
    errno = 0;
    const unsigned long long u = strtoull(text.c_str(), &end, 10);
    const bool u_ok = text[0] >= '0' && text[0] <= '9' && errno == 0 && *end == '\0';
    errno = 0;
    const long long sv = strtoll(text.c_str(), &end, 10);
    const bool s_ok = ((text[0] >= '0' && text[0] <= '9') ||
                       ((text[0] == '-' || text[0] == '+') && text[1] >= '0' && text[1] <= '9')) &&
                      errno == 0 && *end == '\0';
    uint64_t got = 0;
    const int took = uih_input_u64(text.c_str(), &got);
    ASSERT_EQ(took, u_ok ? 1 : 0) << "[" << text << "]";
    if (u_ok) {
      ASSERT_EQ(got, u) << "[" << text << "]";
    }
    uint64_t bits = 0;
    const char* want = uih_input_value(i64, text.c_str(), &bits);
    ASSERT_EQ(want == nullptr, s_ok) << "[" << text << "]";
    if (s_ok) {
      ASSERT_EQ(static_cast<int64_t>(bits), sv) << "[" << text << "]";
    }
    taken += u_ok;
  }
  EXPECT_GT(taken, 100000u);
  uih_schema_free(schema);
}

TEST(SpelledInput, StringIdsAreTheirHashesAsEveryProgramComputesThem) {
  uih_error err{};
  uih_schema* s = Parse(Schema("", R"(, "user_ids": "string")"), &err);
  ASSERT_NE(nullptr, s) << err.msg;
  EXPECT_EQ(UIH_INPUT_STRING, uih_schema_user_ids(s));
  std::vector<Row> rows;
  const std::string text =
      "user_id,group,ts,item\n"
      "A2SUAM1J3GNN3B,g,5,B00005N7P0\n"
      "\"with, comma\",g,6,\n"
      "42,g,7,\"é\"\n"
      "alice,g,8,alice\n";
  ASSERT_EQ(UIH_OK, ReadAll(s, text, &rows, &err)) << err.msg;
  ASSERT_EQ(4u, rows.size());
  EXPECT_EQ(H("A2SUAM1J3GNN3B"), rows[0].user);
  EXPECT_EQ(H("B00005N7P0"), rows[0].item);
  EXPECT_EQ(H("with, comma"), rows[1].user);
  EXPECT_FALSE(rows[1].has_item) << "an empty field is an absent value, not the empty string's hash";
  EXPECT_EQ(H("42"), rows[2].user) << "a string user id that reads as a number is still a string";
  EXPECT_EQ(H("é"), rows[2].item);
  EXPECT_EQ(rows[3].user, rows[3].item) << "one string, one id, whichever column";
  // The integer spelling is unchanged, and an empty string user is refused.
  EXPECT_EQ(UIH_ERR_PARSE, ReadAll(s, "user_id,group,ts\n,g,5\n", nullptr, &err));
  EXPECT_NE(nullptr, strstr(err.msg, "day.csv:2: column 'user_id': expected a user id")) << err.msg;
  uih_schema_free(s);
  s = Parse(Schema("", "", 1, ""), &err);
  ASSERT_NE(nullptr, s) << err.msg;
  EXPECT_EQ(UIH_INPUT_NATIVE, uih_schema_user_ids(s));
  EXPECT_EQ(UIH_ERR_PARSE, ReadAll(s, "user_id,group,ts,item\nalice,g,5,\n", nullptr, &err));
  EXPECT_NE(nullptr, strstr(err.msg, "column 'user_id': expected an unsigned 64-bit integer, got 'alice'"))
      << err.msg;
  EXPECT_EQ(UIH_ERR_PARSE, ReadAll(s, "user_id,group,ts,item\n1,g,5,B00005N7P0\n", nullptr, &err));
  EXPECT_NE(nullptr, strstr(err.msg, "column 'item': expected an unsigned 64-bit integer")) << err.msg;
  uih_schema_free(s);
}

TEST(SpelledInput, TwoStringsWithOneIdAreRefusedNamingBoth) {
  uih_error err{};
  uih_schema* s = Parse(Schema("", R"(, "user_ids": "string")"), &err);
  ASSERT_NE(nullptr, s) << err.msg;
  uih_id_check* ids = nullptr;
  ASSERT_EQ(UIH_OK, uih_id_check_create(&ids, &err));
  // No two strings with one XXH3-64 are known: the check is told that
  // "mallory" had alice's id, as a collision would have it.
  const char* other;
  size_t olen;
  ASSERT_EQ(UIH_OK, uih_id_check_add(ids, H("alice"), "mallory", 7, &other, &olen, &err));
  EXPECT_EQ(nullptr, other);
  ASSERT_EQ(UIH_OK, uih_id_check_add(ids, H("alice"), "mallory", 7, &other, &olen, &err));
  EXPECT_EQ(nullptr, other) << "the same string again is no collision";
  std::vector<Row> rows;
  const std::string text = "user_id,group,ts,item\nbob,g,5,x\nbob,g,6,alice\nalice,g,7,y\n";
  EXPECT_EQ(UIH_ERR_PARSE, ReadAll(s, text, &rows, &err, ids));
  EXPECT_NE(nullptr, strstr(err.msg, "day.csv:3: column 'item': 'alice' and 'mallory' (read before in this load) "
                                     "are two strings with one id"))
      << err.msg;
  EXPECT_EQ(1u, rows.size()) << "the line before is read, the colliding one is not";
  // Strings read once are recorded once; the reader's strings are in it.
  EXPECT_EQ(3u, uih_id_check_count(ids)) << "mallory, bob, x";
  // Without the check, the reader hashes and goes on (an append's caller may not check).
  rows.clear();
  EXPECT_EQ(UIH_OK, ReadAll(s, text, &rows, &err));
  EXPECT_EQ(3u, rows.size());
  uih_id_check_free(ids);
  uih_schema_free(s);
}

TEST(SpelledInput, TheIdCheckKeepsEveryDistinctStringAcrossGrowth) {
  uih_error err{};
  uih_id_check* ids = nullptr;
  ASSERT_EQ(UIH_OK, uih_id_check_create(&ids, &err));
  std::mt19937_64 rng(7);
  std::vector<std::string> strs;
  for (int i = 0; i < 20000; i++) strs.push_back("user-" + std::to_string(rng()) + std::string(i % 40, 'x'));
  const char* other;
  size_t olen;
  for (const std::string& s : strs) {
    ASSERT_EQ(UIH_OK, uih_id_check_add(ids, H(s), s.data(), s.size(), &other, &olen, &err));
    ASSERT_EQ(nullptr, other);
  }
  EXPECT_EQ(strs.size(), uih_id_check_count(ids));
  for (size_t i = 0; i < strs.size(); i += 97) {
    // Every string is still there after the table and arena grew: a
    // different one with its id is a collision naming it exactly.
    ASSERT_EQ(UIH_OK, uih_id_check_add(ids, H(strs[i]), "other", 5, &other, &olen, &err));
    ASSERT_NE(nullptr, other);
    EXPECT_EQ(strs[i], std::string(other, olen));
  }
  EXPECT_EQ(UIH_OK, uih_id_check_add(ids, H(""), "", 0, &other, &olen, &err));
  EXPECT_EQ(nullptr, other);
  EXPECT_EQ(strs.size() + 1, uih_id_check_count(ids));
  uih_id_check_free(ids);
}

// ---- times --------------------------------------------------------------------

int64_t ReadTs(const uih_schema* s, const std::string& value, uih_error* err, int* rc) {
  std::vector<Row> rows;
  *rc = ReadAll(s, "user_id,group,ts\n1,g,\"" + value + "\"\n", &rows, err);
  return rows.empty() ? 0 : rows[0].ts;
}

TEST(SpelledInput, IntegerTimesConvertExactlyOrAreRefused) {
  const char* units[] = {"s", "ms", "us"};
  std::mt19937_64 rng(11);
  for (int from = 0; from < 3; from++)
    for (int to = 0; to < 3; to++) {
      uih_error err{};
      uih_schema* s = Parse(Schema(std::string(R"(, "unit": ")") + units[to] + R"(", "input": ")" + units[from] + "\""), &err);
      ASSERT_NE(nullptr, s) << err.msg;
      for (int i = 0; i < 300; i++) {
        // Random values of every size, many exact multiples of 1000 and 10^6.
        int64_t v = static_cast<int64_t>(rng() >> (rng() % 64));
        if (rng() % 2) v = -v;
        if (i % 3 == 0) v = (v / 1000000) * 1000000;
        int rc;
        const int64_t got = ReadTs(s, std::to_string(v), &err, &rc);
        // The model: exact integer arithmetic in 128 bits.
        __int128 want = v;
        bool exact = true;
        for (int k = from; k < to; k++) want *= 1000;
        for (int k = to; k < from; k++) {
          exact = exact && want % 1000 == 0;
          want /= 1000;
        }
        const bool fits = want >= INT64_MIN && want <= INT64_MAX;
        if (exact && fits) {
          ASSERT_EQ(UIH_OK, rc) << v << " " << units[from] << " -> " << units[to] << ": " << err.msg;
          ASSERT_EQ(static_cast<int64_t>(want), got) << v << " " << units[from] << " -> " << units[to];
        } else {
          ASSERT_EQ(UIH_ERR_PARSE, rc) << v << " " << units[from] << " -> " << units[to];
          ASSERT_NE(nullptr, strstr(err.msg, exact ? "expected a time within the 64-bit range" : "expected a time in whole "))
              << err.msg;
        }
      }
      int rc;
      ReadTs(s, "12.5", &err, &rc);
      EXPECT_EQ(UIH_ERR_PARSE, rc);
      EXPECT_NE(nullptr, strstr(err.msg, "column 'ts': expected an integer number of ")) << err.msg;
      uih_schema_free(s);
    }
}

// The instant of y-m-d h:mi:s at UTC offset `off` minutes, by glibc.
int64_t Timegm(int y, int mo, int d, int h, int mi, int sec, int off) {
  struct tm tm {};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  return static_cast<int64_t>(timegm(&tm)) - off * 60;
}

TEST(SpelledInput, Rfc3339AgreesWithTimegmOverRandomInstants) {
  const char* units[] = {"s", "ms", "us"};
  const int64_t per_second[] = {1, 1000, 1000000};
  std::mt19937_64 rng(3);
  for (int u = 0; u < 3; u++) {
    uih_error err{};
    uih_schema* s = Parse(Schema(std::string(R"(, "unit": ")") + units[u] + R"(", "input": "rfc3339")"), &err);
    ASSERT_NE(nullptr, s) << err.msg;
    for (int i = 0; i < 2000; i++) {
      const int y = 1 + static_cast<int>(rng() % 9999), mo = 1 + static_cast<int>(rng() % 12);
      static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
      const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
      const int d = 1 + static_cast<int>(rng() % static_cast<uint64_t>(mdays[mo - 1] + (mo == 2 && leap)));
      const int h = static_cast<int>(rng() % 24), mi = static_cast<int>(rng() % 60), sec = static_cast<int>(rng() % 60);
      const int off = rng() % 3 == 0 ? 0 : static_cast<int>(rng() % (24 * 60 * 2 - 1)) - (24 * 60 - 1);
      // A fraction of 0..9 digits, exact in the unit or not.
      const int ndigits = static_cast<int>(rng() % 10);
      std::string frac;
      for (int k = 0; k < ndigits; k++) frac += static_cast<char>('0' + rng() % 10);
      char text[96];
      const char sep = "Tt "[rng() % 3];
      snprintf(text, sizeof text, "%04d-%02d-%02d%c%02d:%02d:%02d%s%s", y, mo, d, sep, h, mi, sec,
               ndigits ? "." : "", frac.c_str());
      std::string value = text;
      if (off == 0 && rng() % 2) value += rng() % 2 ? "Z" : "z";
      else {
        snprintf(text, sizeof text, "%c%02d:%02d", off < 0 ? '-' : '+', std::abs(off) / 60, std::abs(off) % 60);
        value += text;
      }
      // The model: the fraction's digits past the unit must be zeros.
      const int places = 3 * u;
      int64_t sub = 0;
      bool exact = true;
      for (int k = 0; k < places; k++) sub = sub * 10 + (k < ndigits ? frac[k] - '0' : 0);
      for (int k = places; k < ndigits; k++) exact = exact && frac[k] == '0';
      int rc;
      const int64_t got = ReadTs(s, value, &err, &rc);
      if (exact) {
        ASSERT_EQ(UIH_OK, rc) << value << " (" << units[u] << "): " << err.msg;
        ASSERT_EQ(Timegm(y, mo, d, h, mi, sec, off) * per_second[u] + sub, got) << value << " (" << units[u] << ")";
      } else {
        ASSERT_EQ(UIH_ERR_PARSE, rc) << value;
        ASSERT_NE(nullptr, strstr(err.msg, "expected a time in whole ")) << err.msg;
      }
    }
    uih_schema_free(s);
  }
}

TEST(SpelledInput, Rfc3339EdgeCasesEachSayWhatWasExpected) {
  uih_error err{};
  uih_schema* s = Parse(Schema(R"(, "unit": "ms", "input": "rfc3339")"), &err);
  ASSERT_NE(nullptr, s) << err.msg;
  struct Case {
    const char* value;
    int64_t ms;             // when accepted
    const char* expected;   // nullptr: accepted
  } cases[] = {
      {"1970-01-01T00:00:00Z", 0, nullptr},
      {"1969-12-31T23:59:59.5Z", -500, nullptr},
      {"2000-02-29T00:00:00Z", 951782400000, nullptr},
      {"2024-02-29T12:00:00+12:00", 1709164800000, nullptr},
      {"2024-01-05T10:00:00.250+01:00", 1704445200250, nullptr},
      {"2024-01-05T10:00:00.250000-00:00", 1704448800250, nullptr},
      {"2024-01-05 10:00:00z", 1704448800000, nullptr},
      {"9999-12-31T23:59:59.999Z", 253402300799999, nullptr},
      {"1900-02-29T00:00:00Z", 0, "a day that month has"},
      {"2023-02-29T00:00:00Z", 0, "a day that month has"},
      {"2024-04-31T00:00:00Z", 0, "a day that month has"},
      {"2024-13-01T00:00:00Z", 0, "a month 01..12"},
      {"2024-00-01T00:00:00Z", 0, "a month 01..12"},
      {"2024-01-01T24:00:00Z", 0, "hours 00..23 and minutes 00..59"},
      {"2016-12-31T23:59:60Z", 0, "a time without a leap second"},
      {"2024-01-01T00:00:00.0001Z", 0, "a time in whole milliseconds (the trait's unit)"},
      {"2024-01-01T00:00:00", 0, "ending in Z or an offset"},
      {"2024-01-01T00:00:00+0100", 0, "an RFC 3339 date-time such as"},
      {"2024-01-01T00:00:00+24:00", 0, "offset with hours 00..23"},
      {"2024-01-01T00:00:00.Z", 0, "an RFC 3339 date-time such as"},
      {"2024-1-01T00:00:00Z", 0, "an RFC 3339 date-time such as"},
      {"2024-01-01T00:00:00Z ", 0, "an RFC 3339 date-time such as"},
      {"1704448800000", 0, "an RFC 3339 date-time such as"},
  };
  for (const Case& c : cases) {
    int rc;
    const int64_t got = ReadTs(s, c.value, &err, &rc);
    if (!c.expected) {
      EXPECT_EQ(UIH_OK, rc) << c.value << ": " << err.msg;
      EXPECT_EQ(c.ms, got) << c.value;
    } else {
      EXPECT_EQ(UIH_ERR_PARSE, rc) << c.value;
      EXPECT_NE(nullptr, strstr(err.msg, "day.csv:2: column 'ts': expected ")) << err.msg;
      EXPECT_NE(nullptr, strstr(err.msg, c.expected)) << c.value << ": " << err.msg;
    }
  }
  uih_schema_free(s);
}

TEST(SpelledInput, TheSchemaSaysWhereSpellingsApplyAndKeepsThemAcrossVersions) {
  struct Bad {
    std::string json;
    const char* message;
  } bad[] = {
      {Schema("", R"(, "user_ids": "uuid")"), R"(field "user_ids": expected one of "integer", "string", got "uuid")"},
      {Schema(R"(, "input": "rfc3339")"), R"(a timestamp read as "rfc3339" needs a "unit")"},
      {Schema(R"(, "unit": "ns")"), R"(field "unit": expected one of "s", "ms", "us", got "ns")"},
      {Schema(R"(, "unit": "ms", "input": "string")"), R"(field "input": expected one of "s", "ms", "us", "rfc3339")"},
      {Schema("", "", 1, R"(, "input": "rfc3339")"), R"(field "input": expected one of "integer", "string")"},
      {Schema("", "", 1, R"(, "unit": "ms")"), R"(field "unit": only a timestamp has a unit)"},
      {R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "traits": [{"name": "ts", "id": 1, "type": "timestamp"}, {"name": "n", "id": 2, "type": "int64", "input": "string"}]}]})",
       R"(groups[0].traits[1]: field "input": only id traits)"},
  };
  for (const Bad& b : bad) {
    uih_error err{};
    uih_schema* s = Parse(b.json, &err);
    EXPECT_EQ(nullptr, s) << b.json;
    EXPECT_EQ(UIH_ERR_SCHEMA, err.code) << b.json;
    EXPECT_NE(nullptr, strstr(err.msg, b.message)) << err.msg;
    uih_schema_free(s);
  }
  struct Change {
    std::string older, newer;
    const char* message;  // nullptr: allowed
  } changes[] = {
      {Schema("", R"(, "user_ids": "string")", 1), Schema("", "", 2), R"("user_ids" changed from "string" to "integer")"},
      {Schema("", "", 1), Schema("", R"(, "user_ids": "string")", 2), R"("user_ids" changed from "integer" to "string")"},
      {Schema("", "", 1), Schema("", "", 2, ""), "trait 2 ('item') changed \"input\"; its stored ids are hashes of strings"},
      {Schema(R"(, "unit": "ms")"), Schema(R"(, "unit": "us")", "", 2), R"(changed "unit" from "ms" to "us")"},
      {Schema(""), Schema(R"(, "unit": "ms")", "", 2), R"(changed "unit" from none to "ms")"},
      // How a time is spelled may change; its unit and what ids are may not.
      {Schema(R"(, "unit": "ms", "input": "s")"), Schema(R"(, "unit": "ms", "input": "rfc3339")", "", 2), nullptr},
      {Schema("", R"(, "user_ids": "string")", 1), Schema("", R"(, "user_ids": "string")", 2), nullptr},
  };
  for (const Change& c : changes) {
    uih_error err{};
    uih_schema* a = Parse(c.older, &err);
    uih_schema* b = Parse(c.newer, &err);
    ASSERT_TRUE(a && b) << err.msg;
    const int rc = uih_schema_check_evolution(a, b, &err);
    if (!c.message) {
      EXPECT_EQ(UIH_OK, rc) << err.msg;
    } else {
      EXPECT_EQ(UIH_ERR_INCOMPATIBLE, rc) << c.newer;
      EXPECT_NE(nullptr, strstr(err.msg, c.message)) << err.msg;
    }
    uih_schema_free(a);
    uih_schema_free(b);
  }
}

}  // namespace
