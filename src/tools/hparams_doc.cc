// Prints the generated key tables of docs/hyperparameters.md
// (scripts/update_hparams_doc.sh writes them into the file).
#include <iostream>

#include "fastnn/hparams.h"

int main() {
  std::cout << fastnn::format_hparams_markdown();
  return 0;
}
