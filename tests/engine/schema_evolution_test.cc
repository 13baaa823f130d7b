// Schema evolution: which successors are accepted, and what a broken one says.
#include <gtest/gtest.h>

#include <string>

#include "uih/schema.h"

namespace {

uih_schema* Parse(const std::string& json) {
  uih_schema* s = nullptr;
  uih_error err{};
  EXPECT_EQ(UIH_OK, uih_schema_parse(json.data(), json.size(), "t", &s, &err)) << err.msg;
  return s;
}

// Version `v` of a one-group schema with the given extra traits.
std::string V(int v, const std::string& traits, const std::string& group = R"("name": "g", "id": 1)") {
  return R"({"name": "s", "version": )" + std::to_string(v) + R"(, "groups": [{)" + group +
         R"(, "traits": [{"name": "ts", "id": 1, "type": "timestamp"})" + traits + "]}]}";
}

struct Case {
  const char* what;
  std::string older, newer;
  const char* message;  // nullptr: must be accepted
  friend void PrintTo(const Case& c, std::ostream* os) { *os << c.what; }
};

class Evolution : public testing::TestWithParam<Case> {};

TEST_P(Evolution, ChecksSuccessor) {
  const Case& c = GetParam();
  uih_schema* a = Parse(c.older);
  uih_schema* b = Parse(c.newer);
  ASSERT_TRUE(a && b);
  uih_error err{};
  int rc = uih_schema_check_evolution(a, b, &err);
  if (c.message == nullptr) {
    EXPECT_EQ(UIH_OK, rc) << err.msg;
  } else {
    EXPECT_EQ(UIH_ERR_INCOMPATIBLE, rc);
    EXPECT_STREQ(c.message, err.msg);
  }
  uih_schema_free(a);
  uih_schema_free(b);
}

const std::string kX = R"(, {"name": "x", "id": 2, "type": "id"})";

const Case kCases[] = {
    {"add trait", V(1, ""), V(2, R"(, {"name": "y", "id": 2, "type": "flag", "added_in": 2})"), nullptr},
    {"drop trait", V(1, kX), V(2, R"(, {"name": "x", "id": 2, "type": "id", "dropped_in": 2})"), nullptr},
    {"add group", V(1, ""),
     R"({"name": "s", "version": 2, "groups": [{"name": "g", "id": 1, "traits": [{"name": "ts", "id": 1, "type": "timestamp"}]},
        {"name": "h", "id": 2, "traits": [{"name": "ts", "id": 1, "type": "timestamp", "added_in": 2}]}]})",
     nullptr},
    {"change stripe size", V(1, ""), V(2, "", R"("name": "g", "id": 1, "stripe_events": 64)"), nullptr},
    {"grow vocabulary", V(1, R"(, {"name": "c", "id": 2, "type": "category", "categories": ["a"]})"),
     V(2, R"(, {"name": "c", "id": 2, "type": "category", "categories": ["a", "b"]})"), nullptr},
    {"same version", V(1, ""), V(1, ""),
     "version 1 does not follow version 1; every change needs a higher version"},
    {"trait vanished", V(1, kX), V(2, ""),
     "group 'g': trait 2 ('x') disappeared; keep it with \"dropped_in\" instead"},
    {"type changed", V(1, kX), V(2, R"(, {"name": "x", "id": 2, "type": "int64"})"),
     "group 'g': trait 2 ('x') changed type from id to int64; add a new trait id instead"},
    {"renamed", V(1, kX), V(2, R"(, {"name": "z", "id": 2, "type": "id"})"),
     "group 'g': trait 2 was 'x', is now 'z'; a trait keeps its name"},
    {"revived", V(2, R"(, {"name": "x", "id": 2, "type": "id", "dropped_in": 2})"), V(3, kX),
     "group 'g': trait 2 ('x') was dropped in version 2 and cannot come back or change its "
     "dropped_in; add a new trait id instead"},
    {"new trait claims old version", V(1, ""), V(2, kX),
     "group 'g': new trait 2 ('x') says added_in 1, but the old schema (version 1) does not have "
     "it; set added_in to the new version"},
    {"group vanished", V(1, ""),
     R"({"name": "s", "version": 2, "groups": [{"name": "h", "id": 2, "traits": [{"name": "ts", "id": 1, "type": "timestamp"}]}]})",
     "group 1 ('g') disappeared; its stored stripes would become unreadable"},
    {"vocabulary reordered", V(1, R"(, {"name": "c", "id": 2, "type": "category", "categories": ["a", "b"]})"),
     V(2, R"(, {"name": "c", "id": 2, "type": "category", "categories": ["b", "a"]})"),
     "group 'g': trait 2 ('c') category code 0 was 'a'; codes are stored, so the vocabulary may "
     "only grow at the end"},
};

INSTANTIATE_TEST_SUITE_P(Cases, Evolution, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<Case>& i) {
                           std::string n = i.param.what;
                           for (auto& ch : n)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(Evolution, ShippedExamplesEvolve) {
  uih_schema *v1 = nullptr, *v2 = nullptr;
  uih_error err{};
  ASSERT_EQ(UIH_OK, uih_schema_load(UIH_SOURCE_DIR "/examples/feed.v1.schema.json", &v1, &err)) << err.msg;
  ASSERT_EQ(UIH_OK, uih_schema_load(UIH_SOURCE_DIR "/examples/feed.schema.json", &v2, &err)) << err.msg;
  EXPECT_EQ(UIH_OK, uih_schema_check_evolution(v1, v2, &err)) << err.msg;
  EXPECT_EQ(UIH_ERR_INCOMPATIBLE, uih_schema_check_evolution(v2, v1, &err));
  uih_schema_free(v1);
  uih_schema_free(v2);
}

}  // namespace
