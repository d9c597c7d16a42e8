// The CPU and node lists of common/id_list.h (the grammar of
// doc/environment.md, "CPU and node lists"), the escaping of values quoted in
// warnings (common/log.h), and env_long's strictness: every value of issue 13
// that was taken as some CPU is rejected, with one warning on one line.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/env.h"
#include "common/id_list.h"
#include "common/log.h"

namespace {

using hcops::UsableIds;

// Ids 0 .. n-1 usable.
UsableIds first(int n) { return UsableIds(static_cast<std::size_t>(n), true); }

void expect_ids(const char *text, const UsableIds &usable, const std::vector<int> &want, bool single = false) {
  std::vector<int> ids;
  hcops::IdListError err;
  if (!hcops::parse_id_list(text, usable, "CPU", single, ids, err))
    fail_msg("\"%s\" rejected: %s at %zu", text, err.what.c_str(), err.pos);
  if (ids != want) {
    std::string got;
    for (int i : ids) got += std::to_string(i) + " ";
    fail_msg("\"%s\" gave %s", text, got.c_str());
  }
}

// `text` is rejected at 1-based position `pos` with `what` in the reason.
void expect_error(const char *text, const UsableIds &usable, std::size_t pos, const char *what, bool single = false) {
  std::vector<int> ids;
  hcops::IdListError err;
  if (hcops::parse_id_list(text, usable, "CPU", single, ids, err)) {
    std::string got;
    for (int i : ids) got += std::to_string(i) + " ";
    fail_msg("\"%s\" accepted as %s", hcops::escaped(text).c_str(), got.c_str());
  }
  if (err.pos + 1 != pos || err.what.find(what) == std::string::npos)
    fail_msg("\"%s\": \"%s\" at position %zu, expected \"%s\" at %zu", hcops::escaped(text).c_str(), err.what.c_str(),
             err.pos + 1, what, pos);
}

void test_grammar(void **) {
  const UsableIds u = first(16);
  expect_ids("0", u, {0});
  expect_ids("15", u, {15});
  expect_ids("0-3,8", u, {0, 1, 2, 3, 8});
  expect_ids("8,0-1", u, {8, 0, 1});  // the order written
  expect_ids("3-3", u, {3});
  expect_ids("007", u, {7});
  expect_ids("last", u, {15});
  expect_ids("LAST", u, {15});
  expect_ids("13-last", u, {13, 14, 15});
  expect_ids("0,last", u, {0, 15});
  expect_ids("5", u, {5}, true);
  expect_ids("last", u, {15}, true);
}

// Nothing outside the grammar: the values of issue 13 first.
void test_rejects(void **) {
  const UsableIds u = first(2);
  expect_error("-1", u, 1, "negative");
  expect_error("99999999999999999999999999", u, 1, "number too large for a CPU");
  expect_error("99999999999999999999", u, 1, "number too large for a CPU");
  expect_error("18446744073709551615", u, 1, "number too large for a CPU");
  expect_error("4294967296", u, 1, "number too large");
  expect_error("3", u, 1, "CPU 3 is not usable");
  expect_error("2147483647", u, 1, "CPU 2147483647 is not usable");
  expect_error("2147483648", u, 1, "number too large");
  expect_error("4294967297", u, 1, "number too large");
  expect_error("1\n2", u, 2, "unexpected character");
  expect_error("0,0,0", u, 3, "CPU 0 named twice");
  expect_error("2", u, 1, "CPU 2 is not usable");
  // Not wrapped even where 2^32 mod 2^k would be usable.
  const UsableIds big = first(1024);
  expect_error("4294967296", big, 1, "number too large");
  expect_error("18446744073709551616", big, 1, "number too large for a CPU");
  expect_error("0-4294967297", big, 3, "number too large");
  // Syntax.
  expect_error("", u, 1, "empty item");
  expect_error(",", u, 1, "empty item");
  expect_error(",1", u, 1, "empty item");
  expect_error("1,", u, 3, "empty item");
  expect_error("0,,1", u, 3, "empty item");
  expect_error("1-", u, 3, "empty item");
  expect_error("1-0", u, 3, "range ends before it starts");
  expect_error("0--1", u, 3, "negative");
  expect_error(" 1", u, 1, "unexpected character");
  expect_error("1 ", u, 2, "unexpected character");
  expect_error("+1", u, 1, "unexpected character");
  expect_error("1x", u, 2, "unexpected character");
  expect_error("0x1", u, 2, "unexpected character");
  expect_error("1;0", u, 2, "unexpected character");
  expect_error("lastly", u, 5, "unexpected character");
  expect_error("las", u, 1, "unexpected character");
  expect_error("fast", u, 1, "unexpected character");
  // Each id once, also through ranges.
  expect_error("0-1,1", u, 5, "CPU 1 named twice");
  expect_error("0-3,2-5", first(8), 5, "CPU 2 named twice");
  expect_error("1,last", u, 3, "CPU 1 named twice");
  // Single ids.
  expect_error("0,1", u, 2, "a list where one CPU is expected", true);
  expect_error("0-1", u, 2, "a range where one CPU is expected", true);
  expect_error("2", u, 1, "CPU 2 is not usable", true);
}

// Ids the process cannot use: outside the set, in a hole of it, or none.
void test_usable(void **) {
  UsableIds holes(8);
  holes[0] = holes[2] = holes[3] = true;
  expect_ids("0,2-3", holes, {0, 2, 3});
  expect_ids("2-last", holes, {2, 3});
  expect_error("1", holes, 1, "CPU 1 is not usable");
  expect_error("0-2", holes, 1, "CPU 1 is not usable");
  expect_error("4", holes, 1, "CPU 4 is not usable");
  expect_error("8", holes, 1, "CPU 8 is not usable");
  expect_error("last", UsableIds(), 1, "no CPU is usable");
  expect_error("0", UsableIds(), 1, "CPU 0 is not usable");
  assert_string_equal(hcops::format_ids(holes).c_str(), "0,2-3");
  UsableIds runs = first(9);
  runs[3] = runs[6] = false;
  assert_string_equal(hcops::format_ids(runs).c_str(), "0-2,4-5,7-8");
  assert_string_equal(hcops::format_ids(UsableIds(4)).c_str(), "none");
  // The affinity of this process: whatever it is, its last CPU is "last".
  const UsableIds cpus = hcops::affinity_cpus();
  assert_true(hcops::format_ids(cpus) != "none");
  int last = -1;
  for (std::size_t i = 0; i < cpus.size(); ++i)
    if (cpus[i]) last = static_cast<int>(i);
  expect_ids("last", cpus, {last});
}

void test_escaping(void **) {
  assert_string_equal(hcops::quoted("0-3").c_str(), "\"0-3\"");
  assert_string_equal(hcops::quoted("1\n2").c_str(), "\"1\\n2\"");
  assert_string_equal(hcops::quoted("a\tb\rc").c_str(), "\"a\\tb\\rc\"");
  assert_string_equal(hcops::quoted("\x01\x7f\xff").c_str(), "\"\\x01\\x7f\\xff\"");
  assert_string_equal(hcops::quoted("say \"hi\" \\o/").c_str(), "\"say \\\"hi\\\" \\\\o/\"");
  const std::string s64(64, 'x'), s100(100, 'y');
  assert_string_equal(hcops::quoted(s64.c_str()).c_str(), ("\"" + s64 + "\"").c_str());
  assert_string_equal(hcops::quoted(s100.c_str()).c_str(), ("\"" + std::string(64, 'y') + "\"...").c_str());
  assert_string_equal(hcops::escaped(s100.c_str(), 3).c_str(), "yyy...");
  assert_string_equal(hcops::escaped("").c_str(), "");
}

// stderr of `fn`, read back from a file it was redirected to. `fn` must not
// fail (cmocka's failures jump out, leaving stderr redirected).
template <class Fn>
std::string stderr_of(Fn fn) {
  std::FILE *f = std::tmpfile();
  assert_non_null(f);
  const int saved = dup(2);
  dup2(fileno(f), 2);
  fn();
  dup2(saved, 2);
  close(saved);
  std::string s;
  std::rewind(f);
  for (int c; (c = std::fgetc(f)) != EOF;) s += static_cast<char>(c);
  std::fclose(f);
  return s;
}

// One warning per variable, on one line, the value escaped and cut.
void test_setting_warns_once(void **) {
  std::vector<int> ids;
  bool taken[2] = {true, true};
  std::string err = stderr_of([&] {
    taken[0] = hcops::id_list_setting("TEST_CORES", "1\n2", "CPU", first(2), false, "using last", ids);
    taken[1] = hcops::id_list_setting("TEST_CORES", "-1", "CPU", first(2), false, "using last", ids);
  });
  assert_false(taken[0] || taken[1]);
  assert_true(ids.empty());
  assert_string_equal(err.c_str(),
                      "hcops: warning: TEST_CORES=\"1\\n2\": unexpected character at position 2 (a list of the CPUs "
                      "this process may use, 0-1; see doc/environment.md); using last\n");
  const std::string long_value = "0," + std::string(200, '7');
  err = stderr_of([&] {
    taken[0] = hcops::id_list_setting("TEST_NODE", long_value.c_str(), "node", first(1), true, "ignored", ids);
  });
  assert_false(taken[0]);
  assert_int_equal(std::count(err.begin(), err.end(), '\n'), 1);
  assert_non_null(
      std::strstr(err.c_str(), ("TEST_NODE=\"0," + std::string(62, '7') + "\"...: a list where one node").c_str()));
  // Unset or empty: nothing said, nothing taken.
  err = stderr_of([&] {
    taken[0] = hcops::id_list_setting("TEST_UNSET", nullptr, "CPU", first(2), false, "x", ids);
    taken[1] = hcops::id_list_setting("TEST_EMPTY", "", "CPU", first(2), false, "x", ids);
  });
  assert_false(taken[0] || taken[1]);
  assert_string_equal(err.c_str(), "");
  setenv("TEST_ENV_CPUS", "1,0", 1);
  assert_true(hcops::env_id_list("TEST_ENV_CPUS", "CPU", first(2), false, "x", ids));
  assert_true((ids == std::vector<int>{1, 0}));
}

// env_long: digits with an optional '-' only; nothing wraps into range.
void test_env_long(void **) {
  const char *bad[] = {"\n1",        " 1", "1 ", "1\n", "+1", "1x", "", "99999999999999999999", "18446744073709551615",
                       "4294967296", "-",  "--1"};
  int i = 0;
  for (const char *v : bad) {
    const std::string name = "TEST_LONG_" + std::to_string(i++);
    setenv(name.c_str(), v, 1);
    long got = 0;
    const std::string err = stderr_of([&] { got = hcops::env_long(name.c_str(), 7, -5, 100); });
    if (got != 7) fail_msg("env_long took \"%s\" as %ld", hcops::escaped(v).c_str(), got);
    // One line quoting the value escaped (empty is unset: silent).
    if (*v && (std::count(err.begin(), err.end(), '\n') != 1 || err.find(name + "=" + hcops::quoted(v)) == err.npos))
      fail_msg("env_long's warning for \"%s\": %s", hcops::escaped(v).c_str(),
               hcops::escaped(err.c_str(), 200).c_str());
  }
  setenv("TEST_LONG_OK", "42", 1);
  assert_int_equal(hcops::env_long("TEST_LONG_OK", 7, -5, 100), 42);
  setenv("TEST_LONG_NEG", "-5", 1);
  assert_int_equal(hcops::env_long("TEST_LONG_NEG", 7, -5, 100), -5);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grammar),
      cmocka_unit_test(test_rejects),
      cmocka_unit_test(test_usable),
      cmocka_unit_test(test_escaping),
      cmocka_unit_test(test_setting_warns_once),
      cmocka_unit_test(test_env_long),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
