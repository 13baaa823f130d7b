// Schema files: valid examples load with the declared content; invalid ones
// fail with the exact error a user would need.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "uih/schema.h"

namespace {

struct Loaded {
  uih_schema* s = nullptr;
  uih_error err{};
  int rc = -1;
  explicit Loaded(const std::string& json, const char* origin = "test.json") {
    rc = uih_schema_parse(json.data(), json.size(), origin, &s, &err);
  }
  ~Loaded() { uih_schema_free(s); }
};

const char* kMinimal = R"({"name": "s", "version": 1, "groups": [
  {"name": "g", "id": 7, "traits": [{"name": "t", "id": 1, "type": "timestamp"}]}]})";

TEST(Schema, MinimalSchemaGetsDefaults) {
  Loaded l(kMinimal);
  ASSERT_EQ(UIH_OK, l.rc) << l.err.msg;
  EXPECT_STREQ("s", uih_schema_name(l.s));
  EXPECT_EQ(1u, uih_schema_version(l.s));
  ASSERT_EQ(1u, uih_schema_group_count(l.s));
  const uih_group* g = uih_schema_group_by_id(l.s, 7);
  ASSERT_NE(nullptr, g);
  EXPECT_EQ(256u, g->stripe_events);
  ASSERT_EQ(1u, g->ntraits);
  EXPECT_EQ(&g->traits[0], g->ts);
  EXPECT_EQ(uih_encodings_for_type(UIH_TYPE_TIMESTAMP), g->ts->encodings);
  EXPECT_EQ(UIH_COMPRESS_AUTO, g->ts->compression);
  EXPECT_EQ(1u, g->ts->added_in);
  EXPECT_EQ(0u, g->ts->dropped_in);
  EXPECT_EQ(nullptr, uih_schema_group_by_id(l.s, 8));
}

// The arrival generation: every group has it by id, nothing else shows it.
TEST(Schema, EveryGroupHasTheArrivalTraitByIdOnly) {
  Loaded l(kMinimal);
  ASSERT_EQ(UIH_OK, l.rc) << l.err.msg;
  const uih_group* g = uih_schema_group_by_id(l.s, 7);
  const uih_trait* a = uih_group_trait_by_id(g, UIH_TRAIT_ARRIVAL);
  ASSERT_NE(nullptr, a);
  EXPECT_STREQ(UIH_TRAIT_ARRIVAL_NAME, a->name);
  EXPECT_EQ(UIH_TYPE_UINT32, a->type);
  EXPECT_EQ(uih_encodings_for_type(UIH_TYPE_UINT32), a->encodings);
  EXPECT_EQ(1u, a->added_in);
  EXPECT_EQ(nullptr, uih_group_trait_by_name(g, UIH_TRAIT_ARRIVAL_NAME));
  EXPECT_EQ(1u, g->ntraits);
  EXPECT_EQ(1u, uih_group_active_count(g));
}

TEST(Schema, ShippedExampleLoadsAsDeclared) {
  uih_schema* s = nullptr;
  uih_error err{};
  ASSERT_EQ(UIH_OK, uih_schema_load(UIH_SOURCE_DIR "/examples/feed.schema.json", &s, &err)) << err.msg;
  EXPECT_EQ(2u, uih_schema_version(s));
  ASSERT_EQ(2u, uih_schema_group_count(s));
  const uih_group* eng = uih_schema_group_by_name(s, "engagement");
  ASSERT_NE(nullptr, eng);
  EXPECT_EQ(eng, uih_schema_group_at(s, 0));  // ascending id order
  EXPECT_EQ(1, eng->id);
  EXPECT_EQ(9u, eng->ntraits);
  EXPECT_EQ(8u, uih_group_active_count(eng));  // "score" is dropped
  for (uint32_t i = 1; i < eng->ntraits; i++) EXPECT_LT(eng->traits[i - 1].id, eng->traits[i].id);

  const uih_trait* score = uih_group_trait_by_id(eng, 5);
  ASSERT_NE(nullptr, score);
  EXPECT_FALSE(uih_trait_active(score));
  EXPECT_EQ(nullptr, uih_group_trait_by_name(eng, "score"));  // by name: active only

  const uih_trait* et = uih_group_trait_by_name(eng, "event_type");
  ASSERT_NE(nullptr, et);
  EXPECT_EQ(UIH_TYPE_CATEGORY, et->type);
  ASSERT_EQ(6u, et->ncategories);
  EXPECT_STREQ("impression", et->categories[0]);
  EXPECT_STREQ("save", et->categories[5]);

  const uih_trait* liked = uih_group_trait_by_name(eng, "liked");
  ASSERT_NE(nullptr, liked);
  EXPECT_EQ(UIH_ENC_SPARSE | UIH_ENC_RLE, liked->encodings);
  EXPECT_EQ(2u, liked->added_in);
  EXPECT_EQ(UIH_COMPRESS_ZSTD, uih_group_trait_by_name(eng, "watch_ms")->compression);
  EXPECT_EQ(1024u, uih_schema_group_by_id(s, 2)->stripe_events);
  uih_schema_free(s);
}

TEST(Schema, TypeTableIsFixed) {
  // Widths and names are part of the batch layout and the file formats.
  EXPECT_EQ(8u, uih_type_width(UIH_TYPE_TIMESTAMP));
  EXPECT_EQ(8u, uih_type_width(UIH_TYPE_ID));
  EXPECT_EQ(8u, uih_type_width(UIH_TYPE_INT64));
  EXPECT_EQ(4u, uih_type_width(UIH_TYPE_UINT32));
  EXPECT_EQ(4u, uih_type_width(UIH_TYPE_FLOAT32));
  EXPECT_EQ(4u, uih_type_width(UIH_TYPE_CATEGORY));
  EXPECT_EQ(1u, uih_type_width(UIH_TYPE_FLAG));
  EXPECT_EQ(0u, uih_type_width(static_cast<uih_type>(0)));
  EXPECT_EQ(0u, uih_type_width(static_cast<uih_type>(8)));
  EXPECT_EQ(nullptr, uih_type_name(static_cast<uih_type>(99)));
  EXPECT_STREQ("dict", uih_encoding_name(UIH_ENC_DICT));
  EXPECT_EQ(nullptr, uih_encoding_name(UIH_ENC_DICT | UIH_ENC_RLE));
  EXPECT_EQ(nullptr, uih_encoding_name(0));
  EXPECT_EQ(0u, uih_encodings_for_type(UIH_TYPE_FLAG) & UIH_ENC_BSS);
}

TEST(Schema, LoadReportsMissingFile) {
  uih_schema* s = nullptr;
  uih_error err{};
  EXPECT_EQ(UIH_ERR_IO, uih_schema_load("/nonexistent/x.json", &s, &err));
  EXPECT_NE(nullptr, std::strstr(err.msg, "/nonexistent/x.json: cannot open: No such file"))
      << err.msg;
  EXPECT_EQ(nullptr, s);
}

struct Invalid {
  const char* what;
  std::string json;
  int code;
  const char* message;  // the whole message, exactly
  friend void PrintTo(const Invalid& c, std::ostream* os) { *os << c.what; }
};

// A valid group with one timestamp trait, followed by `extra` traits.
std::string Group(const std::string& extra, const std::string& fields = R"("name": "g", "id": 1)") {
  return "{" + fields + R"(, "traits": [{"name": "ts", "id": 1, "type": "timestamp"})" + extra + "]}";
}
std::string Schema(const std::string& groups, const std::string& head = R"("name": "s", "version": 2)") {
  return "{" + head + R"(, "groups": [)" + groups + "]}";
}

class InvalidSchema : public testing::TestWithParam<Invalid> {};

TEST_P(InvalidSchema, FailsWithItsMessage) {
  const Invalid& c = GetParam();
  Loaded l(c.json);
  EXPECT_EQ(c.code, l.rc) << c.what;
  EXPECT_EQ(nullptr, l.s);
  EXPECT_STREQ(c.message, l.err.msg) << c.what;
}

const Invalid kInvalid[] = {
    {"syntax", "{\"name\": \"s\",\n  \"version\": 1,,\n}", UIH_ERR_PARSE,
     "test.json: line 2, column 16: invalid JSON: quoted object property name expected"},
    {"truncated", "{\"name\": \"s\", \"gro", UIH_ERR_PARSE,
     "test.json: line 1, column 19: invalid JSON: unexpected end of input"},
    {"trailing", std::string(kMinimal) + " {}", UIH_ERR_PARSE,
     "test.json: line 2, column 85: invalid JSON: unexpected character"},
    {"not an object", "[1, 2]", UIH_ERR_SCHEMA,
     "test.json: expected a JSON object at the top level, got an array"},
    {"unknown top field", R"({"name": "s", "verison": 1})", UIH_ERR_SCHEMA,
     "test.json: unknown field \"verison\" (expected one of: name, version, user_ids, groups)"},
    {"missing version", R"({"name": "s", "groups": []})", UIH_ERR_SCHEMA,
     "test.json: missing field \"version\" (an integer in [1, 2147483647])"},
    {"fractional version", R"({"name": "s", "version": 1.5, "groups": []})", UIH_ERR_SCHEMA,
     "test.json: field \"version\": expected an integer in [1, 2147483647], got a fractional number"},
    {"bad schema name", R"({"name": "my schema", "version": 1, "groups": []})", UIH_ERR_SCHEMA,
     "test.json: field \"name\": \"my schema\" is not an identifier ([A-Za-z_][A-Za-z0-9_]*, 1 to 64 characters)"},
    {"no groups", R"({"name": "s", "version": 1, "groups": []})", UIH_ERR_SCHEMA,
     "test.json: field \"groups\": expected 1 to 65536 entries, got 0"},
    {"group id too large", Schema(Group("", R"("name": "g", "id": 65536)")), UIH_ERR_SCHEMA,
     "test.json: groups[0]: field \"id\": 65536 is out of range [0, 65535]"},
    {"stripe too large", Schema(Group("", R"("name": "g", "id": 1, "stripe_events": 65537)")),
     UIH_ERR_SCHEMA, "test.json: groups[0]: field \"stripe_events\": 65537 is out of range [1, 65536]"},
    {"stripe zero", Schema(Group("", R"("name": "g", "id": 1, "stripe_events": 0)")), UIH_ERR_SCHEMA,
     "test.json: groups[0]: field \"stripe_events\": 0 is out of range [1, 65536]"},
    {"duplicate group id", Schema(Group("") + "," + Group("", R"("name": "h", "id": 1)")),
     UIH_ERR_SCHEMA, "test.json: groups[1]: id 1 is already used by groups[0] (\"g\")"},
    {"duplicate group name", Schema(Group("") + "," + Group("", R"("name": "g", "id": 2)")),
     UIH_ERR_SCHEMA, "test.json: groups[1]: name \"g\" is already used by groups[0]"},
    {"unknown group field", Schema(Group("", R"("name": "g", "id": 1, "stripe_event": 5)")),
     UIH_ERR_SCHEMA,
     "test.json: groups[0]: unknown field \"stripe_event\" (expected one of: name, id, stripe_events, traits)"},
    {"unknown type", Schema(Group(R"(, {"name": "x", "id": 2, "type": "string"})")), UIH_ERR_SCHEMA,
     "test.json: groups[0].traits[1]: field \"type\": expected one of timestamp, id, int64, uint32, "
     "float32, category, flag, got \"string\""},
    {"trait id zero", Schema(Group(R"(, {"name": "x", "id": 0, "type": "id"})")), UIH_ERR_SCHEMA,
     "test.json: groups[0].traits[1]: field \"id\": 0 is out of range [1, 65534]"},
    {"the system trait's id", Schema(Group(R"(, {"name": "x", "id": 65535, "type": "uint32"})")), UIH_ERR_SCHEMA,
     "test.json: groups[0].traits[1]: field \"id\": 65535 is out of range [1, 65534]"},
    {"the system trait's name", Schema(Group(R"(, {"name": "uih_arrival", "id": 9, "type": "uint32"})")),
     UIH_ERR_SCHEMA,
     "test.json: groups[0].traits[1]: name \"uih_arrival\" is reserved for the system trait (the arrival generation)"},
    {"duplicate trait id", Schema(Group(R"(, {"name": "x", "id": 1, "type": "id"})")), UIH_ERR_SCHEMA,
     "test.json: groups[0].traits[1]: id 1 is already used by traits[0] (\"ts\"); trait ids are "
     "never reused, even after a drop"},
    {"duplicate trait name", Schema(Group(R"(, {"name": "x", "id": 2, "type": "id"}, {"name": "x", "id": 3, "type": "flag"})")),
     UIH_ERR_SCHEMA, "test.json: groups[0].traits[2]: name \"x\" is already used by traits[1]"},
    {"no timestamp", Schema(R"({"name": "g", "id": 1, "traits": [{"name": "x", "id": 2, "type": "id"}]})"),
     UIH_ERR_SCHEMA,
     "test.json: groups[0]: no active trait of type \"timestamp\"; every group needs one (the event time)"},
    {"two timestamps", Schema(Group(R"(, {"name": "t2", "id": 2, "type": "timestamp"})")),
     UIH_ERR_SCHEMA,
     "test.json: groups[0].traits[1]: second active timestamp trait (\"ts\" is the event time "
     "already); use int64 for other times"},
    {"dropped timestamp",
     Schema(Group(R"(, {"name": "t0", "id": 2, "type": "timestamp", "dropped_in": 2})")), UIH_ERR_SCHEMA,
     "test.json: groups[0].traits[1]: the timestamp trait cannot be dropped: it is the event time "
     "every stripe of the group stores"},
    {"timestamp younger than a trait",
     Schema(R"({"name": "g", "id": 1, "traits": [{"name": "ts", "id": 1, "type": "timestamp", "added_in": 2},
        {"name": "x", "id": 2, "type": "id"}]})"), UIH_ERR_SCHEMA,
     "test.json: groups[0]: timestamp trait \"ts\" has added_in 2, after trait \"x\" (added_in 1); "
     "the event time exists from the group's first version"},
    {"encoding for wrong type", Schema(Group(R"(, {"name": "f", "id": 2, "type": "flag", "encodings": ["bss"]})")),
     UIH_ERR_SCHEMA,
     "test.json: groups[0].traits[1]: encodings[0]: expected one of plain, rle, sparse (the "
     "encodings for flag), got \"bss\""},
    {"bad compression", Schema(Group(R"(, {"name": "f", "id": 2, "type": "id", "compression": "snappy"})")),
     UIH_ERR_SCHEMA,
     "test.json: groups[0].traits[1]: field \"compression\": expected one of auto, none, lz4, zstd, got \"snappy\""},
    {"categories on a non-category", Schema(Group(R"(, {"name": "f", "id": 2, "type": "uint32", "categories": ["a"]})")),
     UIH_ERR_SCHEMA,
     "test.json: groups[0].traits[1]: field \"categories\" is only allowed on category traits, not uint32"},
    {"repeated category", Schema(Group(R"(, {"name": "c", "id": 2, "type": "category", "categories": ["a", "b", "a"]})")),
     UIH_ERR_SCHEMA, "test.json: groups[0].traits[1]: categories[2]: \"a\" repeats categories[0]"},
    {"added after version", Schema(Group(R"(, {"name": "x", "id": 2, "type": "id", "added_in": 3})")),
     UIH_ERR_SCHEMA, "test.json: groups[0].traits[1]: field \"added_in\": 3 is out of range [1, 2]"},
    {"dropped before added", Schema(Group(R"(, {"name": "x", "id": 2, "type": "id", "added_in": 2, "dropped_in": 2})")),
     UIH_ERR_SCHEMA, "test.json: groups[0].traits[1]: dropped_in (2) must be after added_in (2)"},
    {"reserved trait name", Schema(Group(R"(, {"name": "user_id", "id": 2, "type": "id"})")),
     UIH_ERR_SCHEMA, "test.json: groups[0].traits[1]: name \"user_id\" is reserved for an input column"},
    {"trait is not an object", Schema(Group(", 17")), UIH_ERR_SCHEMA,
     "test.json: groups[0].traits[1]: expected an object, got an integer"},
    {"huge negative integer", Schema(Group("", R"("name": "g", "id": -99999999999999999999999)")), UIH_ERR_SCHEMA,
     "test.json: groups[0]: field \"id\": the number does not fit in 64 bits (expected an integer in [0, 65535])"},
    {"negative id", Schema(Group("", R"("name": "g", "id": -1)")), UIH_ERR_SCHEMA,
     "test.json: groups[0]: field \"id\": -1 is out of range [0, 65535]"},
    {"huge integer", Schema(Group("", R"("name": "g", "id": 99999999999999999999999)")), UIH_ERR_SCHEMA,
     "test.json: groups[0]: field \"id\": the number does not fit in 64 bits (expected an integer in [0, 65535])"},
};

INSTANTIATE_TEST_SUITE_P(Cases, InvalidSchema, testing::ValuesIn(kInvalid),
                         [](const testing::TestParamInfo<Invalid>& i) {
                           std::string n = i.param.what;
                           for (auto& ch : n)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(Schema, DroppedTraitFreesItsNameButNotItsId) {
  Loaded ok(Schema(Group(R"(, {"name": "x", "id": 2, "type": "id", "dropped_in": 2},
                            {"name": "x", "id": 3, "type": "uint32", "added_in": 2})")));
  ASSERT_EQ(UIH_OK, ok.rc) << ok.err.msg;
  const uih_group* g = uih_schema_group_at(ok.s, 0);
  EXPECT_EQ(3, uih_group_trait_by_name(g, "x")->id);
  EXPECT_EQ(UIH_TYPE_ID, uih_group_trait_by_id(g, 2)->type);
}

TEST(Schema, RejectsNulBytesAndOversizedInput) {
  std::string j = kMinimal;
  j[5] = '\0';
  Loaded nul(j);
  EXPECT_EQ(UIH_ERR_PARSE, nul.rc);
  EXPECT_STREQ("test.json: byte 5: NUL byte in JSON text", nul.err.msg);
  Loaded deep(std::string(100, '[') + std::string(100, ']'));
  EXPECT_EQ(UIH_ERR_PARSE, deep.rc);
  EXPECT_NE(nullptr, std::strstr(deep.err.msg, "nesting too deep")) << deep.err.msg;
}

}  // namespace
