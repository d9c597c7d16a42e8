#include "mem/policy.h"

#include <strings.h>

#include <cctype>
#include <cstring>

namespace hcops {
namespace mem {

const Rule *Policy::match(std::size_t size) const {
  for (const Rule &r : rules)
    if (size >= r.lo && size < r.hi) return &r;
  return nullptr;
}

std::size_t Policy::lowest_explicit() const {
  std::size_t lo = SIZE_MAX;
  for (const Rule &r : rules)
    if (r.has_lo && r.lo < lo) lo = r.lo;
  return lo;
}

std::size_t parse_size(const char *s, std::size_t &value) {
  std::size_t i = 0, v = 0;
  if (!std::isdigit(static_cast<unsigned char>(s[0]))) return 0;
  for (; std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
    if (v > (SIZE_MAX - 9) / 10) return 0;
    v = v * 10 + (s[i] - '0');
  }
  int shift = 0;
  switch (s[i]) {
    case 'k':
    case 'K': shift = 10; break;
    case 'm':
    case 'M': shift = 20; break;
    case 'g':
    case 'G': shift = 30; break;
    case 't':
    case 'T': shift = 40; break;
    default: break;
  }
  if (shift) {
    ++i;
    if (s[i] == 'i' && (s[i + 1] == 'B' || s[i + 1] == 'b')) i += 2;
    else if (s[i] == 'B' || s[i] == 'b') ++i;
  } else if (s[i] == 'B' || s[i] == 'b') {
    ++i;
  }
  if (shift && v > (SIZE_MAX >> shift)) return 0;
  value = v << shift;
  return i;
}

namespace {

struct Parser {
  const char *text;
  std::size_t pos = 0;
  ParseError &err;

  char peek() const { return text[pos]; }
  bool fail(const char *what) { return fail_at(pos, what); }
  bool fail_at(std::size_t at, const char *what) {
    err.pos = at;
    err.what = what;
    return false;
  }
  bool word(std::string &w) {
    w.clear();
    while (std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_') w += text[pos++];
    return !w.empty();
  }

  // n ['-' n] (',' n ['-' n])*; a ',' followed by a letter ends the list.
  bool nodes(NodeSet &set) {
    do {
      if (peek() == ',') ++pos;
      // Errors point at the number at fault, not past it.
      std::size_t a = 0, b = 0, n = 0, start = pos;
      // Digits past kMaxNodes stop counting, so a long number cannot wrap into range.
      for (; std::isdigit(static_cast<unsigned char>(peek())); ++pos, ++n)
        if (a < kMaxNodes) a = a * 10 + (peek() - '0');
      if (!n || a >= kMaxNodes) return fail_at(start, n ? "node number too large" : "expected a node number");
      b = a;
      if (peek() == '-') {
        start = ++pos;
        n = 0;
        for (b = 0; std::isdigit(static_cast<unsigned char>(peek())); ++pos, ++n)
          if (b < kMaxNodes) b = b * 10 + (peek() - '0');
        if (!n || b >= kMaxNodes) return fail_at(start, n ? "node number too large" : "expected a node number");
        if (b < a) return fail_at(start, "node range ends before it starts");
      }
      for (std::size_t i = a; i <= b; ++i) set.set(i);
    } while (peek() == ',' && std::isdigit(static_cast<unsigned char>(text[pos + 1])));
    return true;
  }

  bool range(Rule &r) {
    std::size_t v = 0, n = parse_size(text + pos, v);
    if (n) {
      r.lo = v;
      r.has_lo = true;
      pos += n;
    } else if (std::isdigit(static_cast<unsigned char>(peek()))) {
      return fail("size too large");
    }
    if (peek() != '-') return fail("expected '-' in a size range");
    ++pos;
    n = parse_size(text + pos, v);
    if (n) {
      if (v <= r.lo) return fail("empty size range");  // at the upper bound
      r.hi = v;
      pos += n;
    } else if (std::isdigit(static_cast<unsigned char>(peek()))) {
      return fail("size too large");
    }
    if (peek() != ':') return fail("expected ':' after a size range");
    ++pos;
    return true;
  }

  bool item(Rule &r, bool &have_place, bool &have_pages) {
    const std::size_t start = pos;
    std::string w;
    if (!word(w)) return fail("expected a placement or page kind");
    static const struct {
      const char *name;
      Place place;
    } places[] = {{"fast", Place::fast},
                  {"ddr", Place::ddr},
                  {"local", Place::local},
                  {"system", Place::system},
                  {"interleave", Place::interleave},
                  {"bind", Place::bind}};
    static const struct {
      const char *name;
      Pages pages;
    } kinds[] = {{"thp", Pages::thp}, {"hugetlb", Pages::hugetlb}, {"base", Pages::base}};
    for (const auto &p : places) {
      if (strcasecmp(w.c_str(), p.name)) continue;
      if (have_place) {
        pos = start;
        return fail("a second placement in one rule");
      }
      have_place = true;
      r.place = p.place;
      if (p.place == Place::bind || p.place == Place::interleave) {
        if (peek() == ':') {
          ++pos;
          return nodes(r.nodes);
        }
        if (p.place == Place::bind) return fail("bind needs ':' and a node list");
      }
      return true;
    }
    for (const auto &k : kinds) {
      if (strcasecmp(w.c_str(), k.name)) continue;
      if (have_pages) {
        pos = start;
        return fail("a second page kind in one rule");
      }
      have_pages = true;
      r.pages = k.pages;
      return true;
    }
    pos = start;
    return fail("unknown word (placements: fast ddr local system interleave bind; pages: thp hugetlb base)");
  }

  bool rule(Rule &r) {
    if (std::isdigit(static_cast<unsigned char>(peek())) || peek() == '-') {
      if (!range(r)) return false;
    }
    bool have_place = false, have_pages = false;
    for (;;) {
      if (!item(r, have_place, have_pages)) return false;
      if (peek() != ',') return true;
      ++pos;
    }
  }
};

}  // namespace

bool parse_policy(const char *text, Policy &out, ParseError &err) {
  Parser p{text, 0, err};
  Policy parsed;
  if (!text || !*text) {
    err = {0, "empty policy"};
    return false;
  }
  for (;;) {
    while (p.peek() == ' ') ++p.pos;
    Rule r;
    if (!p.rule(r)) return false;
    parsed.rules.push_back(r);
    while (p.peek() == ' ') ++p.pos;
    if (p.peek() == '\0') break;
    if (p.peek() != ';') return p.fail("expected ';' or the end");
    ++p.pos;
    if (p.peek() == '\0') break;  // a trailing ';' is harmless
  }
  out = std::move(parsed);
  return true;
}

const char *place_name(Place p) {
  switch (p) {
    case Place::system: return "system";
    case Place::fast: return "fast";
    case Place::ddr: return "ddr";
    case Place::local: return "local";
    case Place::interleave: return "interleave";
    case Place::bind: return "bind";
  }
  return "?";
}

const char *pages_name(Pages p) {
  switch (p) {
    case Pages::thp: return "thp";
    case Pages::hugetlb: return "hugetlb";
    case Pages::base: return "base";
  }
  return "?";
}

std::string format_size(std::size_t b) {
  static const char *const units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && b && b % 1024 == 0) b /= 1024, ++u;
  return std::to_string(b) + units[u];
}

static std::string node_list(const NodeSet &set) {
  std::string s;
  for (int i = 0; i < kMaxNodes; ++i) {
    if (!set.test(i)) continue;
    int j = i;
    while (j + 1 < kMaxNodes && set.test(j + 1)) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(i);
    if (j > i) s += '-' + std::to_string(j);
    i = j;
  }
  return s;
}

std::string describe(const Rule &r) {
  std::string s;
  if (r.has_lo || r.hi != SIZE_MAX)
    s += (r.has_lo ? format_size(r.lo) : "") + "-" + (r.hi != SIZE_MAX ? format_size(r.hi) : "") + ":";
  s += place_name(r.place);
  if (r.nodes.any()) s += ":" + node_list(r.nodes);
  if (r.place != Place::system) s += std::string(",") + pages_name(r.pages);
  return s;
}

std::string describe(const Policy &p) {
  std::string s;
  for (const Rule &r : p.rules) s += (s.empty() ? "" : ";") + describe(r);
  return s;
}

}  // namespace mem
}  // namespace hcops
