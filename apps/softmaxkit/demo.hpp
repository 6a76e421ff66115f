#pragma once

namespace smk::app {

struct DemoOptions {
  bool force_cpu = false;
};

// Prints the lesson's program and the article's worked examples; returns 0 when every check passed, 1 otherwise.
int run_demo(const DemoOptions& options);

}  // namespace smk::app
