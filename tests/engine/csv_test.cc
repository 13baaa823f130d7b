// The loader-input CSV reader: random batches written as CSV read back
// exactly (every type, absent values, quoting, CRLF), and every kind of bad
// input gives its precise message (file, line, column, expectation).
#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <csv.h>

#include "engine/stripe_gen.h"
#include "layout.h"
#include "uih/csv.h"

namespace {

const char* kSchema = R"({"name":"s","version":1,"groups":[
  {"name":"clicks","id":1,"traits":[
    {"name":"ts","id":1,"type":"timestamp"},
    {"name":"item","id":2,"type":"id"},
    {"name":"delta","id":3,"type":"int64"},
    {"name":"watch","id":4,"type":"uint32"},
    {"name":"score","id":5,"type":"float32"},
    {"name":"kind","id":6,"type":"category","categories":["view","click","like, with comma"]},
    {"name":"liked","id":7,"type":"flag"}]},
  {"name":"search","id":2,"traits":[
    {"name":"time","id":1,"type":"timestamp"},
    {"name":"query","id":2,"type":"id"}]}]})";

class Csv : public testing::Test {
 protected:
  void SetUp() override {
    uih_error err{};
    ASSERT_EQ(UIH_OK, uih_schema_parse(kSchema, strlen(kSchema), "s", &schema_, &err)) << err.msg;
  }
  void TearDown() override { uih_schema_free(schema_); }

  // Reads all of `text`; returns the code of the first error (message in err_).
  // `buffering`: 0 the stream's own, 1 a 7-byte buffer (every line spans
  // refills), 2 none (a byte at a time).
  int ReadAll(const std::string& text, std::vector<std::pair<uint64_t, std::string>>* rows = nullptr,
              int buffering = 0) {
    FILE* f = fmemopen(const_cast<char*>(text.data()), text.size(), "r");
    static char tiny[7];
    if (buffering == 1) setvbuf(f, tiny, _IOFBF, sizeof tiny);
    if (buffering == 2) setvbuf(f, nullptr, _IONBF, 0);
    uih_csv_reader* r = nullptr;
    err_ = uih_error{};
    int rc = uih_csv_open_stream(f, "day.csv", schema_, &r, &err_);
    while (rc == UIH_OK) {
      uint64_t user;
      const uih_batch* ev;
      rc = uih_csv_next(r, &user, &ev, &err_);
      if (rc != UIH_OK || !ev) break;
      if (rows) rows->push_back({user, Describe(ev)});
    }
    uih_csv_close(r);
    fclose(f);
    return rc;
  }
  // "group|id=present:bits|..." of a one-event batch.
  static std::string Describe(const uih_batch* b) {
    std::string s = b->group->name;
    for (uint32_t c = 0; c < b->ncolumns; c++) {
      s += "|" + std::to_string(b->columns[c].trait->id) + "=";
      if (uih_column_has(&b->columns[c], 0)) s += std::to_string(uih_column_get_bits(&b->columns[c], 0));
    }
    return s;
  }
  uih_schema* schema_ = nullptr;
  uih_error err_{};
};

// The reader splits lines no quoting touches itself (layout.h,
// uih_layout_split_plain) and leaves the others to libcsv: on random lines
// of spaces, tabs, delimiters, carriage returns, quotes and text, every
// line it splits has the fields libcsv gives it, and it declines the
// lines it should (quotes, a stray '\r', blank lines, space or tab
// delimiters, no '\n').
TEST(CsvSplit, PlainLinesSplitAsLibcsvSplitsThem) {
  std::mt19937_64 rng(17);
  const char alphabet[] = {'a', 'b', '7', ' ', ' ', '\t', ',', ';', '\x1f', '|', '-', '\r', '"', 'x'};
  uint64_t split = 0, declined = 0, quoted = 0;
  for (int i = 0; i < 40000; i++) {
    const char delim = ",;\x1f|\t "[rng() % 6];
    std::string line;
    const size_t len = rng() % 24;
    const bool quotes = rng() % 4 == 0, crs = rng() % 4 == 0; /* lines with either, now and then */
    for (size_t k = 0; k < len; k++) {
      const uint64_t pick = rng() % 100;
      char c = pick < 25 ? delim : alphabet[rng() % sizeof alphabet];
      if ((c == '\r' && !crs) || (c == '"' && !quotes)) c = 'y';
      line += c;
    }
    if (rng() % 5 == 0) line += '\r';
    if (rng() % 20 != 0) line += '\n';
    std::vector<std::string> ours, theirs;
    auto put = [](void* arg, const char* text, size_t n) {
      static_cast<std::vector<std::string>*>(arg)->emplace_back(text, n);
    };
    const int took = uih_layout_split_plain(line.data(), line.size(), delim, put, &ours);
    // libcsv as the reader drives it, counting the records it ends.
    struct Got {
      std::vector<std::string> fields;
      int records = 0;
    } got;
    struct csv_parser p;
    ASSERT_EQ(csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_EMPTY_IS_NULL), 0);
    csv_set_delim(&p, static_cast<unsigned char>(delim));
    const size_t parsed = csv_parse(
        &p, line.data(), line.size(),
        [](void* f, size_t n, void* d) {
          static_cast<Got*>(d)->fields.emplace_back(f ? static_cast<const char*>(f) : "", f ? n : 0);
        },
        [](int, void* d) { static_cast<Got*>(d)->records++; }, &got);
    const bool whole = parsed == line.size() && got.records == 1 && p.pstate == 0;
    csv_free(&p);
    const bool plain = line.find('"') == std::string::npos;
    quoted += !plain;
    if (took) {
      split++;
      EXPECT_TRUE(whole) << "a line the splitter takes is one whole record to libcsv: [" << line << "]";
      EXPECT_EQ(ours, got.fields) << "[" << line << "] delimiter " << int{delim};
    } else {
      declined++;
      EXPECT_TRUE(!plain || line.empty() || line.back() != '\n' || delim == ' ' || delim == '\t' ||
                  line.find('\r') < line.size() - 2 || got.fields.empty())
          << "declined a plain line: [" << line << "]";
    }
  }
  EXPECT_GT(split, 15000u);
  EXPECT_GT(declined, 10000u);
  EXPECT_GT(quoted, 3000u);
}

TEST_F(Csv, RandomEventsReadBackExactly) {
  const uih_group* g = uih_schema_group_at(schema_, 0);
  std::mt19937_64 rng(3);
  for (int iter = 0; iter < 50; iter++) {
    uih_batch* b = nullptr;
    ASSERT_EQ(UIH_OK, uih_batch_create(g, 200, nullptr, 0, &b, nullptr));
    uih_test::FillRandomBatch(rng, b, 1 + (uint32_t)(rng() % 200));
    // Write it the way `uih gen` does, quoting some fields and using CRLF
    // in some files, with the columns in a random order.
    std::vector<int> order = {0, 1, 2, 3, 4, 5, 6};
    std::shuffle(order.begin(), order.end(), rng);
    bool crlf = rng() % 2;
    std::string text = "group,user_id";
    for (int c : order) text += "," + std::string(c == 0 ? "ts" : b->columns[c].trait->name);
    text += crlf ? "\r\n" : "\n";
    std::vector<std::pair<uint64_t, std::string>> want;
    for (uint32_t r = 0; r < b->count; r++) {
      uint64_t user = rng();
      text += (rng() % 2 ? "\"clicks\"," : "1,") + std::to_string(user);
      uih_batch* one = nullptr;
      ASSERT_EQ(UIH_OK, uih_batch_create(g, 1, nullptr, 0, &one, nullptr));
      uint32_t row;
      uih_batch_append(one, &row, nullptr);
      for (int c : order) {
        const uih_column* col = &b->columns[c];
        text += ",";
        if (!uih_column_has(col, r) && c != 0) continue;
        if (c == 0) uih_column_set_bits(&b->columns[0], r, uih_column_get_bits(col, r));
        uint64_t bits = uih_column_get_bits(col, r);
        uih_column_set_bits(&one->columns[c], 0, bits);
        char buf[64];
        switch (col->trait->type) {
          case UIH_TYPE_TIMESTAMP:
          case UIH_TYPE_INT64: snprintf(buf, sizeof buf, "%" PRId64, (int64_t)bits); break;
          case UIH_TYPE_FLOAT32: {
            float f = uih_column_get_f32(col, r);
            if (f != f) {  // NaN payloads do not survive text: write the canonical one
              uint32_t q = 0x7fc00000u;
              uih_column_set_bits(&one->columns[c], 0, q);
              snprintf(buf, sizeof buf, "nan");
            } else {
              snprintf(buf, sizeof buf, "%.9g", (double)f);
            }
            break;
          }
          case UIH_TYPE_CATEGORY:
            if (bits < 3) snprintf(buf, sizeof buf, "\"%s\"", col->trait->categories[bits]);
            else snprintf(buf, sizeof buf, "%" PRIu64, bits);
            break;
          case UIH_TYPE_FLAG: snprintf(buf, sizeof buf, "%s", bits ? (rng() % 2 ? "true" : "1") : "0"); break;
          default: snprintf(buf, sizeof buf, "%" PRIu64, bits); break;
        }
        text += buf;
      }
      text += crlf ? "\r\n" : "\n";
      want.push_back({user, Describe(one)});
      uih_batch_free(one);
    }
    uih_batch_free(b);
    for (int buffering = 0; buffering < 3; buffering++) {  // lines taken from the buffer or a byte at a time
      std::vector<std::pair<uint64_t, std::string>> got;
      ASSERT_EQ(UIH_OK, ReadAll(text, &got, buffering)) << err_.msg;
      EXPECT_EQ(want, got) << "buffering " << buffering;
    }
  }
}

TEST_F(Csv, TheTimestampColumnIsEachGroupsTimestamp) {
  std::vector<std::pair<uint64_t, std::string>> rows;
  ASSERT_EQ(UIH_OK, ReadAll("user_id,group,ts,query,item\n5,search,-7,99,\n6,clicks,8,,3\n", &rows))
      << err_.msg;
  ASSERT_EQ(2u, rows.size());
  EXPECT_EQ("search|1=18446744073709551609|2=99", rows[0].second);
  EXPECT_EQ(6u, rows[1].first);
  // No trailing newline, and blank lines are skipped.
  rows.clear();
  ASSERT_EQ(UIH_OK, ReadAll("user_id,group,ts\n\n1,2,3", &rows)) << err_.msg;
  EXPECT_EQ(1u, rows.size());
}

TEST_F(Csv, BadInputGivesPreciseErrors) {
  struct Case {
    const char* text;
    int code;
    const char* message;
  } cases[] = {
      {"", UIH_ERR_PARSE, "day.csv: empty input, expected a header line 'user_id,group,ts,...'"},
      {"user_id,group\n", UIH_ERR_PARSE, "day.csv:1: the header has no 'ts' column"},
      {"user_id,group,ts,ts\n", UIH_ERR_PARSE, "day.csv:1: column 'ts' appears twice (columns 3 and 4)"},
      {"user_id,group,ts,nope\n", UIH_ERR_PARSE,
       "day.csv:1: column 'nope' is not an active trait of any group of the schema"},
      {"user_id,group,ts,time\n", UIH_ERR_PARSE,
       "day.csv:1: column 'time' is group 'search''s timestamp; name it 'ts'"},
      {"user_id,group,ts\n1,clicks\n", UIH_ERR_PARSE, "day.csv:2: 2 fields, the header has 3"},
      {"user_id,group,ts\n1,clicks,5\n-1,clicks,5\n", UIH_ERR_PARSE,
       "day.csv:3: column 'user_id': expected an unsigned 64-bit integer, got '-1'"},
      {"user_id,group,ts\n1,other,5\n", UIH_ERR_PARSE,
       "day.csv:2: column 'group': expected a group name or id of the schema, got 'other'"},
      {"user_id,group,ts\n1,clicks,\n", UIH_ERR_PARSE,
       "day.csv:2: column 'ts': missing (every event needs its timestamp)"},
      {"user_id,group,ts\n1,clicks,9223372036854775808\n", UIH_ERR_PARSE,
       "day.csv:2: column 'ts': expected a signed 64-bit integer, got '9223372036854775808'"},
      {"user_id,group,ts,watch\n1,clicks,5,4294967296\n", UIH_ERR_PARSE,
       "day.csv:2: column 'watch': expected an unsigned 32-bit integer, got '4294967296'"},
      {"user_id,group,ts,kind\n1,clicks,5,purchase\n", UIH_ERR_PARSE,
       "day.csv:2: column 'kind': expected a category of the trait's vocabulary or its code, "
       "got 'purchase'"},
      {"user_id,group,ts,liked\n1,clicks,5,yes\n", UIH_ERR_PARSE,
       "day.csv:2: column 'liked': expected a flag: 0, 1, false or true, got 'yes'"},
      {"user_id,group,ts,score\n1,clicks,5,1.5x\n", UIH_ERR_PARSE,
       "day.csv:2: column 'score': expected a float, got '1.5x'"},
      {"user_id,group,ts,score\n1,clicks,5,1e39\n", UIH_ERR_PARSE,
       "day.csv:2: column 'score': expected a float within float32 range, got '1e39'"},
      {"user_id,group,ts,item\n1,search,5,7\n", UIH_ERR_PARSE,
       "day.csv:2: column 'item' has a value, but group 'search' has no such trait"},
      {"user_id,group,ts\n1,clicks,\"5\n", UIH_ERR_PARSE, "day.csv:2: malformed CSV at the end"},
      {"user_id,group,ts\n1,clicks,5\"x\n", UIH_ERR_PARSE, "day.csv:2: malformed CSV"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.code, ReadAll(c.text)) << c.text;
    EXPECT_NE(nullptr, strstr(err_.msg, c.message)) << "input: " << c.text << "\nmessage: " << err_.msg;
  }
  // A line past the limit is an error, not a memory hog.
  std::string big = "user_id,group,ts\n1,clicks," + std::string(2u << 20, '7') + "\n";
  EXPECT_EQ(UIH_ERR_PARSE, ReadAll(big));
  EXPECT_NE(nullptr, strstr(err_.msg, "day.csv:2: line longer than")) << err_.msg;
  // The limit is 1 MiB with the line break, however the stream buffers:
  // a line of exactly that is read (its ts is then too long a number), one
  // byte more is not.
  for (int buffering = 0; buffering < 3; buffering++) {
    const size_t head = std::string("1,clicks,").size(), limit = size_t{1} << 20;
    const std::string at = "user_id,group,ts\n1,clicks," + std::string(limit - head - 1, '7') + "\n";
    EXPECT_EQ(UIH_ERR_PARSE, ReadAll(at, nullptr, buffering));
    EXPECT_EQ(nullptr, strstr(err_.msg, "line longer than")) << err_.msg;
    EXPECT_NE(nullptr, strstr(err_.msg, "day.csv:2: column 'ts'")) << err_.msg;
    const std::string over = "user_id,group,ts\n1,clicks," + std::string(limit - head, '7') + "\n";
    EXPECT_EQ(UIH_ERR_PARSE, ReadAll(over, nullptr, buffering));
    EXPECT_NE(nullptr, strstr(err_.msg, "day.csv:2: line longer than")) << err_.msg;
  }
}

// A reader that collects bad records (the loader's --rejects) goes on after
// each: random files mixing good lines with every kind of bad record give
// the good events exactly as a file of only the good lines does, and each
// bad record's text and line exactly as it was written.
TEST_F(Csv, ABadRecordCanBeSkippedAndIsGivenBackVerbatim) {
  const std::vector<std::string> good = {"1,clicks,5,7,click", "2,search,9,,", "3,clicks,11,,\"like, with comma\"",
                                         "4,clicks,12,8,view"};
  const std::vector<std::string> bad = {"1,clicks",          "x,clicks,5,7,view", "1,nope,5,,",   "1,clicks,,,",
                                        "1,clicks,5,-7,view", "1,clicks,5,7,buy", "1,search,5,7,", "1,clicks,5\"x,,",
                                        "1,clicks,5,7,\"multi\nline\"", "\"1\n\",clicks,5,7,view",
                                        "\"\n\n1\",clicks,5,7,view"};
  std::mt19937_64 rng(11);
  for (int iter = 0; iter < 200; iter++) {
    std::string text = "user_id,group,ts,item,kind\n", only_good = text;
    std::vector<std::pair<uint64_t, std::string>> want_bad;  // line, text
    uint64_t line = 2;
    const int n = 1 + (int)(rng() % 12);
    for (int i = 0; i < n; i++) {
      bool is_bad = rng() % 3 == 0;
      const std::string& l = is_bad ? bad[rng() % bad.size()] : good[rng() % good.size()];
      text += l + "\n";
      if (is_bad) want_bad.push_back({line, l});
      else only_good += l + "\n";
      line += 1 + std::count(l.begin(), l.end(), '\n');
    }
    std::vector<std::pair<uint64_t, std::string>> want_good;
    ASSERT_EQ(UIH_OK, ReadAll(only_good, &want_good)) << err_.msg;

    FILE* f = fmemopen(const_cast<char*>(text.data()), text.size(), "r");
    uih_csv_reader* r = nullptr;
    ASSERT_EQ(UIH_OK, uih_csv_open_stream(f, "day.csv", schema_, &r, &err_)) << err_.msg;
    std::vector<std::pair<uint64_t, std::string>> got_good, got_bad;
    for (;;) {
      uint64_t user;
      const uih_batch* ev;
      int rc = uih_csv_next(r, &user, &ev, &err_);
      if (rc == UIH_OK && !ev) break;
      if (rc == UIH_OK) {
        got_good.push_back({user, Describe(ev)});
        continue;
      }
      ASSERT_EQ(UIH_ERR_PARSE, rc) << err_.msg;
      ASSERT_EQ(1, uih_csv_resumable(r)) << err_.msg;
      size_t len;
      const char* t = uih_csv_record_text(r, &len);
      ASSERT_NE(nullptr, t);
      got_bad.push_back({uih_csv_record_line(r), std::string(t, len)});
      EXPECT_NE(nullptr, strstr(err_.msg, ("day.csv:" + std::to_string(uih_csv_record_line(r))).c_str())) << err_.msg;
    }
    uih_csv_close(r);
    fclose(f);
    EXPECT_EQ(want_good, got_good) << text;
    EXPECT_EQ(want_bad, got_bad) << text;
  }
}

// What cannot go on says so: a line past the limit, a bad header.
TEST_F(Csv, SomeErrorsEndTheInput) {
  std::string big = "user_id,group,ts\n1,clicks," + std::string(2u << 20, '7') + "\n1,clicks,5\n";
  FILE* f = fmemopen(const_cast<char*>(big.data()), big.size(), "r");
  uih_csv_reader* r = nullptr;
  ASSERT_EQ(UIH_OK, uih_csv_open_stream(f, "day.csv", schema_, &r, &err_)) << err_.msg;
  uint64_t user;
  const uih_batch* ev;
  EXPECT_EQ(UIH_ERR_PARSE, uih_csv_next(r, &user, &ev, &err_));
  EXPECT_EQ(0, uih_csv_resumable(r));
  uih_csv_close(r);
  fclose(f);
}

// The engine's writer and reader agree: random events of every type, with
// category names that need quoting or read as numbers, written by
// uih_csv_write_* read back bit for bit (a NaN as its sign's quiet NaN).
TEST(CsvWrite, WhatTheWriterWritesReadsBackExactly) {
  const char* json = R"({"name":"s","version":1,"groups":[{"name":"g","id":4,"traits":[
    {"name":"ts","id":1,"type":"timestamp"},
    {"name":"item","id":2,"type":"id"},
    {"name":"delta","id":3,"type":"int64"},
    {"name":"watch","id":4,"type":"uint32"},
    {"name":"score","id":5,"type":"float32"},
    {"name":"kind","id":6,"type":"category","categories":["a, b","say \"hi\""," padded ","7","0","x"]},
    {"name":"code","id":7,"type":"category"},
    {"name":"liked","id":8,"type":"flag"}]}]})";
  uih_schema* schema = nullptr;
  uih_error err{};
  ASSERT_EQ(UIH_OK, uih_schema_parse(json, strlen(json), "s", &schema, &err)) << err.msg;
  const uih_group* g = uih_schema_group_at(schema, 0);
  std::mt19937_64 rng(17);
  for (int iter = 0; iter < 40; iter++) {
    uih_batch* b = nullptr;
    ASSERT_EQ(UIH_OK, uih_batch_create(g, 300, nullptr, 0, &b, nullptr));
    uih_test::FillRandomBatch(rng, b, 1 + (uint32_t)(rng() % 300));
    char* text = nullptr;
    size_t len = 0;
    FILE* f = open_memstream(&text, &len);
    std::vector<uint64_t> users;
    ASSERT_EQ(UIH_OK, uih_csv_write_header(f, b, &err)) << err.msg;
    for (uint32_t r = 0; r < b->count; r++) {
      users.push_back(rng() % 4 ? rng() % 1000 : rng());
      ASSERT_EQ(UIH_OK, uih_csv_write_row(f, users.back(), b, r, &err)) << err.msg;
    }
    fclose(f);
    FILE* in = fmemopen(text, len, "r");
    uih_csv_reader* reader = nullptr;
    ASSERT_EQ(UIH_OK, uih_csv_open_stream(in, "w.csv", schema, &reader, &err)) << err.msg;
    for (uint32_t r = 0; r < b->count; r++) {
      uint64_t user;
      const uih_batch* ev;
      ASSERT_EQ(UIH_OK, uih_csv_next(reader, &user, &ev, &err)) << err.msg;
      ASSERT_NE(nullptr, ev);
      ASSERT_EQ(users[r], user);
      for (uint32_t c = 0; c < b->ncolumns; c++) {
        const uih_column* want = &b->columns[c];
        const uih_column* got = &ev->columns[uih_batch_column_index(ev, want->trait->id)];
        ASSERT_EQ(uih_column_has(want, r) != 0, uih_column_has(got, 0) != 0) << want->trait->name << " row " << r;
        uint64_t w = uih_column_get_bits(want, r), v = uih_column_get_bits(got, 0);
        if (want->trait->type == UIH_TYPE_FLOAT32 && uih_column_has(want, r)) {
          float x = uih_column_get_f32(want, r);
          if (x != x) w = (w & 0x80000000u) | 0x7fc00000u;  // the quiet NaN of its sign
        }
        ASSERT_EQ(w, v) << want->trait->name << " row " << r << " in:\n" << std::string(text, len);
      }
    }
    uint64_t user;
    const uih_batch* ev;
    ASSERT_EQ(UIH_OK, uih_csv_next(reader, &user, &ev, &err));
    EXPECT_EQ(nullptr, ev);
    uih_csv_close(reader);
    fclose(in);
    free(text);
    uih_batch_free(b);
  }
  uih_schema_free(schema);
}

TEST_F(Csv, CategoryCodesOutsideTheVocabularyAreRefused) {
  EXPECT_EQ(UIH_OK, ReadAll("user_id,group,ts,kind\n1,clicks,5,2\n")) << err_.msg;
  EXPECT_EQ(UIH_ERR_PARSE, ReadAll("user_id,group,ts,kind\n1,clicks,5,3\n"));
  EXPECT_STREQ("day.csv:2: column 'kind': expected a category of the trait's vocabulary or its code, got '3'",
               err_.msg);
}

}  // namespace
