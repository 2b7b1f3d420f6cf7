// Runs a doctest context and fails a run whose filters select no test case: meson runs parts
// of one executable by --test-case and --source-file filters, and a filter that matches
// nothing (a renamed case or file) must fail, not pass with nothing run. Include it once per
// program, from the file that defines main (it registers a listener).
#pragma once

#include <doctest/doctest.h>

#include <cstdio>

namespace testsel {

inline int selected = -1;  // test cases that passed the filters, once a run has ended

struct selected_count : doctest::IReporter {
  explicit selected_count(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    selected = static_cast<int>(stats.numTestCasesPassingFilters);
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

DOCTEST_REGISTER_LISTENER("selected_count", 1, selected_count);

inline int run(doctest::Context& context) {
  const int result = context.run();
  if (context.shouldExit() || result != 0) return result;
  if (selected == 0) {
    std::fprintf(stderr, "no test case matches the filters\n");
    return 1;
  }
  return 0;
}

}  // namespace testsel
