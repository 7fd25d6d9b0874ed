// Prints the generated tables of docs/hyperparameters.md: the key tables,
// then the optimizer names from the optimizer factory's table
// (scripts/update_hparams_doc.sh writes them into the file).
#include <iostream>

#include "fastnn/hparams.h"
#include "src/optim/optimizers.h"

int main() {
  std::cout << fastnn::format_hparams_markdown() << "\n"
            << fastnn::optim::format_optimizers_markdown();
  return 0;
}
