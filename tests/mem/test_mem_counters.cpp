// include/hcops.h documents the counters hcops_mem_stat() answers; the
// implementation answers the names of src/mem/stats.cpp's table, which
// stat_names() lists. Neither list is repeated here: the names are read from
// the header's comment and compared with stat_names() both ways, and every
// documented name must get an answer (hcops_mem_stat() returns mem::stat()).
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

// After the streams: cmocka's fail() macro would rename basic_ios::fail().
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include "mem/allocator.h"
#include "mem/stats.h"

#ifndef HCOPS_PUBLIC_HEADER
#error "HCOPS_PUBLIC_HEADER: the path of include/hcops.h"
#endif

namespace mem = hcops::mem;

namespace {

// The comment right before hcops_mem_stat's declaration.
std::string stat_comment() {
  std::ifstream in(HCOPS_PUBLIC_HEADER);
  if (!in) fail_msg("cannot read %s", HCOPS_PUBLIC_HEADER);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string h = ss.str();
  const std::size_t decl = h.find("size_t hcops_mem_stat(");
  if (decl == std::string::npos) fail_msg("%s: no hcops_mem_stat declaration", HCOPS_PUBLIC_HEADER);
  const std::size_t open = h.rfind("/*", decl), close = h.rfind("*/", decl);
  if (open == std::string::npos || close == std::string::npos || close < open ||
      h.find_first_not_of(" \t\n", close + 2) != decl)
    fail_msg("%s: no comment right before hcops_mem_stat", HCOPS_PUBLIC_HEADER);
  return h.substr(open, close - open);
}

// "bytes.<thp|base>.node<N>" -> "bytes.thp.node<N>", "bytes.base.node<N>":
// alternatives are expanded, a placeholder without '|' is kept.
void expand(const std::string &name, std::set<std::string> &out) {
  for (std::size_t lt = name.find('<'); lt != std::string::npos; lt = name.find('<', lt + 1)) {
    const std::size_t gt = name.find('>', lt);
    if (gt == std::string::npos) fail_msg("unclosed '<' in \"%s\"", name.c_str());
    const std::string inner = name.substr(lt + 1, gt - lt - 1);
    if (inner.find('|') == std::string::npos) continue;
    std::stringstream alts(inner);
    for (std::string alt; std::getline(alts, alt, '|');) expand(name.substr(0, lt) + alt + name.substr(gt + 1), out);
    return;
  }
  out.insert(name);
}

std::set<std::string> documented() {
  const std::string c = stat_comment();
  std::set<std::string> names;
  for (std::size_t q = c.find('"'); q != std::string::npos; q = c.find('"', q + 1)) {
    const std::size_t end = c.find('"', q + 1);
    if (end == std::string::npos) fail_msg("unbalanced '\"' in the comment of hcops_mem_stat");
    expand(c.substr(q + 1, end - q - 1), names);
    q = end;
  }
  return names;
}

// A name to query: "<N>" becomes node `node`.
std::string instance(std::string name, int node) {
  const std::size_t at = name.find("<N>");
  if (at != std::string::npos) name.replace(at, 3, std::to_string(node));
  return name;
}

// Every name the header lists is answered, for the first and last node row.
void test_documented_names_are_answered(void **) {
  const std::set<std::string> doc = documented();
  assert_true(doc.size() > 10);  // the comment was found and read
  for (const std::string &name : doc) {
    if (instance(name, 0).find('<') != std::string::npos)
      fail_msg("\"%s\": a placeholder other than <N> or <a|b>", name.c_str());
    for (int node : {0, mem::kStatNodes - 1})
      if (mem::stat(instance(name, node).c_str()) == SIZE_MAX)
        fail_msg("include/hcops.h lists \"%s\", which hcops_mem_stat() does not answer", instance(name, node).c_str());
  }
}

// Every name the implementation answers is listed in the header.
void test_answered_names_are_documented(void **) {
  const std::set<std::string> doc = documented();
  const std::vector<std::string> answered = mem::stat_names();
  assert_true(answered.size() > 10);
  for (const std::string &name : answered) {
    if (mem::stat(instance(name, 0).c_str()) == SIZE_MAX)
      fail_msg("stat_names() lists \"%s\", unanswered", name.c_str());
    if (!doc.count(name))
      fail_msg("hcops_mem_stat() answers \"%s\", which include/hcops.h does not list", name.c_str());
  }
}

// What is not a counter stays unknown: the checks above can fail.
void test_unknown_names(void **) {
  for (const char *bad : {"", "no_such_counter", "bytes", "bytes.thp.node64", "bytes.thp.node-1", "Live"})
    assert_int_equal(mem::stat(bad), SIZE_MAX);
  assert_int_equal(mem::stat(nullptr), SIZE_MAX);
}

}  // namespace

int main() {
  // As the interposer's constructor does: until then "threshold" is SIZE_MAX.
  mem::init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_documented_names_are_answered),
      cmocka_unit_test(test_answered_names_are_documented),
      cmocka_unit_test(test_unknown_names),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
