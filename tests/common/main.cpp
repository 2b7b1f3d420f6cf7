#define DOCTEST_CONFIG_IMPLEMENT
#include "run_selected.hpp"

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  return testsel::run(context);
}
