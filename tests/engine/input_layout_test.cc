// Input files as people publish them (uih_input_layout, uih/csv.h): the
// same random events written five ways — loader-input CSV, a mapped TSV
// with its own column names, order and an extra column, a headerless
// "::" file with a fixed group, JSON Lines with nested fields, and a
// semicolon file whose delimiter is found — read back as the very same
// events; and each kind of layout mistake or bad line gives its message.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "uih/csv.h"

namespace {

const char* kSchema = R"({"name": "s", "version": 1, "groups": [
  {"name": "clicks", "id": 1, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "item", "id": 2, "type": "id"},
    {"name": "kind", "id": 3, "type": "category", "categories": ["view", "click", "like"]},
    {"name": "watch", "id": 4, "type": "uint32"},
    {"name": "liked", "id": 5, "type": "flag"}]},
  {"name": "other", "id": 2, "traits": [{"name": "time", "id": 1, "type": "timestamp"}]}]})";

struct Ev {
  uint64_t user;
  int64_t ts;
  uint64_t item;
  int kind, watch, liked;  // -1: absent
  bool operator==(const Ev& o) const {
    return user == o.user && ts == o.ts && item == o.item && kind == o.kind && watch == o.watch && liked == o.liked;
  }
};
std::ostream& operator<<(std::ostream& os, const Ev& e) {
  return os << "{" << e.user << "," << e.ts << "," << e.item << "," << e.kind << "," << e.watch << "," << e.liked
            << "}";
}

class InputLayout : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(UIH_OK, uih_schema_parse(kSchema, strlen(kSchema), "s", &schema_, &err_)) << err_.msg;
  }
  void TearDown() override { uih_schema_free(schema_); }

  // Reads `text` named `name` through `layout`; the first error's code.
  int Read(const std::string& name, const std::string& text, const uih_input_layout* layout, std::vector<Ev>* out,
           std::vector<uint64_t>* bad_lines = nullptr) {
    FILE* f = fmemopen(const_cast<char*>(text.data()), text.size(), "r");
    uih_csv_reader* r = nullptr;
    err_ = uih_error{};
    int rc = uih_csv_open_layout(f, name.c_str(), schema_, layout, &r, &err_);
    while (rc == UIH_OK) {
      uint64_t user;
      const uih_batch* ev;
      rc = uih_csv_next(r, &user, &ev, &err_);
      if (rc != UIH_OK && bad_lines && uih_csv_resumable(r)) {
        bad_lines->push_back(uih_csv_record_line(r));
        rc = UIH_OK;
        continue;
      }
      if (rc != UIH_OK || !ev) break;
      auto get = [&](uint16_t id) -> int64_t {
        const int c = uih_batch_column_index(ev, id);
        return c >= 0 && uih_column_has(&ev->columns[c], 0) ? static_cast<int64_t>(uih_column_get_bits(&ev->columns[c], 0))
                                                            : -1;
      };
      out->push_back({user, get(1), static_cast<uint64_t>(get(2)), static_cast<int>(get(3)), static_cast<int>(get(4)),
                      static_cast<int>(get(5))});
    }
    uih_csv_close(r);
    fclose(f);
    return rc;
  }
  uih_schema* schema_ = nullptr;
  uih_error err_{};
};

std::string Opt(int v) { return v < 0 ? "" : std::to_string(v); }

TEST_F(InputLayout, FiveSpellingsOfOneLogReadAsTheSameEvents) {
  std::mt19937_64 rng(19);
  const char* kinds[] = {"view", "click", "like"};
  for (int round = 0; round < 20; round++) {
    std::vector<Ev> evs;
    const int n = 1 + static_cast<int>(rng() % 200);
    for (int i = 0; i < n; i++)
      evs.push_back({rng() % 50, static_cast<int64_t>(rng() % 2000000) - 1000000, rng() >> (rng() % 64),
                     static_cast<int>(rng() % 4) - 1, rng() % 3 ? static_cast<int>(rng() % 100000) : -1,
                     static_cast<int>(rng() % 3) - 1});
    std::string plain = "user_id,group,ts,item,kind,watch,liked\n";
    std::string tsv = "Liked\tWatch Time\tnote\tUser\tWhen\tItem\tKind\n";
    std::string colons, jsonl, semi = "user_id;ts;item;kind;watch;liked\n";
    for (const Ev& e : evs) {
      const std::string kind = e.kind < 0 ? "" : kinds[e.kind];
      plain += std::to_string(e.user) + ",clicks," + std::to_string(e.ts) + "," + std::to_string(e.item) + "," + kind +
               "," + Opt(e.watch) + "," + Opt(e.liked) + "\n";
      tsv += (e.liked < 0 ? "" : e.liked ? "true" : "false") + std::string("\t") + Opt(e.watch) + "\tfree, text\t" +
             std::to_string(e.user) + "\t" + std::to_string(e.ts) + "\t" + std::to_string(e.item) + "\t" +
             (e.kind < 0 ? "" : std::to_string(e.kind)) + "\n";
      colons += std::to_string(e.user) + "::" + std::to_string(e.ts) + "::" + std::to_string(e.item) + "::" + kind +
                "::" + Opt(e.watch) + "::" + Opt(e.liked) + "\n";
      jsonl += "{\"who\": {\"id\": " + std::to_string(e.user) + ", \"name\": \"x\"}, \"at\": " + std::to_string(e.ts) +
               ", \"item\": \"" + std::to_string(e.item) + "\"" + (e.kind < 0 ? "" : ", \"kind\": \"" + kind + "\"") +
               ", \"stats\": {\"watch\": " + (e.watch < 0 ? "null" : std::to_string(e.watch)) + "}" +
               (e.liked < 0 ? "" : e.liked ? ", \"liked\": true" : ", \"liked\": false") + ", \"tags\": [1, 2]}\n";
      if (rng() % 10 == 0) jsonl += "\n";  // blank lines are no records
      semi += std::to_string(e.user) + ";" + std::to_string(e.ts) + ";" + std::to_string(e.item) + ";" + kind + ";" +
              Opt(e.watch) + ";" + Opt(e.liked) + "\n";
    }
    std::vector<Ev> want, got;
    ASSERT_EQ(UIH_OK, Read("day.csv", plain, nullptr, &want)) << err_.msg;
    ASSERT_EQ(evs, want);
    const uih_input_layout tsv_layout = {nullptr, nullptr, "clicks",
                                         "user_id=User,ts=When,item=Item,kind=Kind,watch=Watch Time,liked=Liked", nullptr};
    ASSERT_EQ(UIH_OK, Read("day.tsv", tsv, &tsv_layout, &got)) << err_.msg;
    EXPECT_EQ(want, got) << "a mapped TSV, its delimiter found, an extra column ignored";
    got.clear();
    const uih_input_layout colon_layout = {nullptr, "::", "clicks", nullptr, "user_id,ts,item,kind,watch,liked"};
    ASSERT_EQ(UIH_OK, Read("ratings.dat", colons, &colon_layout, &got)) << err_.msg;
    EXPECT_EQ(want, got) << "a headerless '::' file";
    got.clear();
    const uih_input_layout json_layout = {nullptr, nullptr, "clicks",
                                          "user_id=who.id,ts=at,item=item,kind=kind,watch=stats.watch,liked=liked",
                                          nullptr};
    ASSERT_EQ(UIH_OK, Read("dump.jsonl.zst", jsonl, &json_layout, &got)) << err_.msg;
    EXPECT_EQ(want, got) << "JSON Lines by its name, nested fields";
    got.clear();
    const uih_input_layout semi_layout = {nullptr, nullptr, "clicks", nullptr, nullptr};
    ASSERT_EQ(UIH_OK, Read("day.txt", semi, &semi_layout, &got)) << err_.msg;
    EXPECT_EQ(want, got) << "a semicolon file, its delimiter found, its group fixed";
  }
}

TEST_F(InputLayout, JsonLinesWithoutAMapNameFieldsAsTheSchemaDoes) {
  std::vector<Ev> got;
  const uih_input_layout l = {"jsonl", nullptr, nullptr, nullptr, nullptr};
  const std::string text =
      "{\"user_id\": 7, \"group\": \"clicks\", \"ts\": 5, \"item\": 9, \"liked\": 1, \"unknown\": \"ignored\"}\n"
      "{\"user_id\": \"8\", \"group\": \"other\", \"ts\": -3}\n";
  ASSERT_EQ(UIH_OK, Read("events.txt", text, &l, &got)) << err_.msg;
  ASSERT_EQ(2u, got.size());
  EXPECT_EQ((Ev{7, 5, 9, -1, -1, 1}), got[0]);
  EXPECT_EQ(8u, got[1].user);
  EXPECT_EQ(-3, got[1].ts);
}

TEST_F(InputLayout, WithoutALayoutANameSaysJsonLinesAndAFixedGroupNeedsNoGroupField) {
  std::vector<Ev> got;
  const std::string text = "{\"user_id\": 7, \"group\": \"clicks\", \"ts\": 5, \"item\": 9}\n";
  ASSERT_EQ(UIH_OK, Read("day.ndjson.gz", text, nullptr, &got)) << err_.msg;
  ASSERT_EQ(1u, got.size());
  EXPECT_EQ((Ev{7, 5, 9, -1, -1, -1}), got[0]);
  got.clear();
  const uih_input_layout fixed = {nullptr, nullptr, "clicks", nullptr, nullptr};
  ASSERT_EQ(UIH_OK, Read("day.jsonl", "{\"user_id\": 8, \"ts\": 6, \"kind\": \"like\"}\n", &fixed, &got)) << err_.msg;
  ASSERT_EQ(1u, got.size());
  EXPECT_EQ((Ev{8, 6, UINT64_MAX, 2, -1, -1}), got[0]) << "no item: absent";
  // A mapped file's columns the map leaves out may repeat, or have no name.
  got.clear();
  const uih_input_layout mapped = {nullptr, nullptr, "clicks", "user_id=u,ts=t", nullptr};
  ASSERT_EQ(UIH_OK, Read("a.csv", "x,u,x,,t,\n1,2,3,4,5,6\n", &mapped, &got)) << err_.msg;
  ASSERT_EQ(1u, got.size());
  EXPECT_EQ(2u, got[0].user);
  EXPECT_EQ(5, got[0].ts);
}

TEST_F(InputLayout, EachMistakeSaysWhatWasExpected) {
  struct Case {
    const char* name;
    std::string text;
    uih_input_layout layout;
    int code;
    const char* message;
  } cases[] = {
      {"a.csv", "userId,ts\n1,2\n", {nullptr, nullptr, "clicks", "user_id=userId,ts=ts,item=movieId", nullptr},
       UIH_ERR_PARSE, "a.csv:1: the map gives 'item' column 'movieId', which the header does not have"},
      {"a.csv", "userId,ts\n1,2\n", {nullptr, nullptr, nullptr, "user_id=userId,ts=ts", nullptr}, UIH_ERR_PARSE,
       "a.csv:1: the map gives no column for 'group'"},
      {"a.csv", "u,t\n1,2\n", {nullptr, nullptr, "clicks", "user_id=u,ts=t,score=s", nullptr}, UIH_ERR_PARSE,
       "the map gives 'score' column 's', which the header does not have"},
      {"a.csv", "u,t,s\n1,2,3\n", {nullptr, nullptr, "clicks", "user_id=u,ts=t,score=s", nullptr}, UIH_ERR_PARSE,
       "a.csv:1: the map gives 'score' column 's', but 'score' is not an active trait of any group of the schema"},
      {"a.csv", "user_id,group,ts\n1,clicks,2\n", {nullptr, nullptr, "clicks", nullptr, nullptr}, UIH_ERR_PARSE,
       "a.csv:1: column 'group' is the group, but every event's group is 'clicks' (--group)"},
      {"a.csv", "x\n", {nullptr, nullptr, "nope", nullptr, nullptr}, UIH_ERR_INVALID_ARGUMENT,
       "a.csv: group 'nope': the schema has no such group"},
      {"a.csv", "x\n", {"xml", nullptr, nullptr, nullptr, nullptr}, UIH_ERR_INVALID_ARGUMENT,
       "a.csv: format 'xml': expected csv or jsonl"},
      {"a.csv", "x\n", {nullptr, "abcde", nullptr, nullptr, nullptr}, UIH_ERR_INVALID_ARGUMENT,
       "a.csv: delimiter 'abcde': expected 1 to 4 bytes"},
      {"a.csv", "x\n", {nullptr, nullptr, nullptr, "user_id", nullptr}, UIH_ERR_INVALID_ARGUMENT,
       "map 'user_id': entry 1 'user_id' is not name=column"},
      {"a.csv", "x\n", {nullptr, nullptr, nullptr, "ts=a,ts=b", nullptr}, UIH_ERR_INVALID_ARGUMENT,
       "map 'ts=a,ts=b': 'ts' is mapped twice"},
      {"a.csv", "x\n", {nullptr, nullptr, nullptr, "user_id=id,item=id", nullptr}, UIH_ERR_INVALID_ARGUMENT,
       "map 'user_id=id,item=id': column 'id' is given to 'user_id' and to 'item'"},
      {"a.dat", "1::2\n", {nullptr, "::", "clicks", nullptr, "user_id,item"}, UIH_ERR_PARSE,
       "a.dat (--columns): the --columns list has no 'ts' column (expected user_id,ts,<traits...>)"},
      {"a.csv", "u,when\n1,2\n", {nullptr, nullptr, "other", "user_id=u,time=when", nullptr}, UIH_ERR_PARSE,
       "a.csv:1: the map names 'time', group 'other''s timestamp; map it as ts=when"},
      {"a.csv", "x\n", {nullptr, nullptr, nullptr, nullptr, "a,,b"}, UIH_ERR_INVALID_ARGUMENT,
       "columns 'a,,b': name 2 is empty"},
      {"a.jsonl", "x\n", {nullptr, nullptr, nullptr, nullptr, "a,b"}, UIH_ERR_INVALID_ARGUMENT,
       "a.jsonl: columns: JSON Lines name their fields"},
      {"a.dat", "1::2::3\n", {nullptr, "::", "clicks", nullptr, "user_id,ts"}, UIH_ERR_PARSE,
       "a.dat:1: 3 fields, the header has 2"},
      {"a.jsonl", "{\"u\": 1, \"t\": 2}\n{\"u\": 1, \"t\": [2]}\n", {nullptr, nullptr, "clicks", "user_id=u,ts=t", nullptr},
       UIH_ERR_PARSE, "a.jsonl:2: field 't': expected a value, got array"},
      {"a.jsonl", "{\"u\": 1, \"t\": 2\n", {nullptr, nullptr, "clicks", "user_id=u,ts=t", nullptr}, UIH_ERR_PARSE,
       "a.jsonl:1: not JSON: the object does not end on its line"},
      {"a.jsonl", "[1, 2]\n", {nullptr, nullptr, "clicks", "user_id=u,ts=t", nullptr}, UIH_ERR_PARSE,
       "a.jsonl:1: expected a JSON object, got array"},
      {"a.jsonl", "{\"u\": 1, \"t\": 2} 3\n", {nullptr, nullptr, "clicks", "user_id=u,ts=t", nullptr}, UIH_ERR_PARSE,
       "a.jsonl:1: more than one JSON value on the line"},
      {"a.jsonl", "{\"u\": 99999999999999999999999, \"t\": 2}\n", {nullptr, nullptr, "clicks", "user_id=u,ts=t", nullptr},
       UIH_ERR_PARSE, "a.jsonl:1: field 'u': a number at or past the 64-bit limits"},
      {"a.jsonl", "{\"u\": 1, \"t\": 2.5}\n", {nullptr, nullptr, "clicks", "user_id=u,ts=t", nullptr}, UIH_ERR_PARSE,
       "a.jsonl:1: column 't': expected a signed 64-bit integer, got '2.5'"},
      {"a.jsonl", "{\"t\": 2}\n", {nullptr, nullptr, "clicks", "user_id=u,ts=t", nullptr}, UIH_ERR_PARSE,
       "a.jsonl:1: column 'u': expected an unsigned 64-bit integer, got ''"},
      {"a.csv", "When,U\n,1\n", {nullptr, nullptr, "clicks", "user_id=U,ts=When", nullptr}, UIH_ERR_PARSE,
       "a.csv:2: column 'When': missing (every event needs its timestamp)"},
      {"a.jsonl", "{\"u\": 1, \"t\": 2, \"k\": \"buy\"}\n", {nullptr, nullptr, "clicks", "user_id=u,ts=t,kind=k", nullptr},
       UIH_ERR_PARSE, "a.jsonl:1: column 'k': expected a category of the trait's vocabulary or its code, got 'buy'"},
  };
  for (const Case& c : cases) {
    std::vector<Ev> got;
    EXPECT_EQ(c.code, Read(c.name, c.text, &c.layout, &got)) << c.text;
    EXPECT_NE(nullptr, strstr(err_.msg, c.message)) << "input: " << c.text << "\nmessage: " << err_.msg;
  }
}

TEST_F(InputLayout, BadLinesOfEveryFormatAreSkippedWithTheirLines) {
  std::vector<Ev> got;
  std::vector<uint64_t> bad;
  const uih_input_layout l = {nullptr, nullptr, "clicks", "user_id=u,ts=t", nullptr};
  const std::string text = "{\"u\": 1, \"t\": 1}\n{oops\n\n{\"u\": 2, \"t\": \"x\"}\n{\"u\": 3, \"t\": 3}\n";
  ASSERT_EQ(UIH_OK, Read("a.jsonl", text, &l, &got, &bad)) << err_.msg;
  ASSERT_EQ(2u, got.size());
  EXPECT_EQ(3u, got[1].user);
  EXPECT_EQ((std::vector<uint64_t>{2, 4}), bad);
  got.clear();
  bad.clear();
  const uih_input_layout d = {nullptr, "::", "clicks", nullptr, "user_id,ts"};
  ASSERT_EQ(UIH_OK, Read("a.dat", "1::1\n2::x\n3\n4::4\n", &d, &got, &bad)) << err_.msg;
  EXPECT_EQ(2u, got.size());
  EXPECT_EQ((std::vector<uint64_t>{2, 3}), bad);
}

}  // namespace
