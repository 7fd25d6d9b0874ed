// train_image_classifier --config FILE [--KEY=VALUE ...]
#include <iostream>

#include "fastnn/trainer.h"
#include "src/train/builder.h"
#include "src/train/tool_main.h"

int main(int argc, char** argv) {
  return fastnn::train::tool_main(
      argc, argv, "train_image_classifier",
      "--config FILE [--KEY=VALUE ...] [--dry_run]",
      [](fastnn::LoadResult& args) {
        if (args.print_cluster) {
          std::cout << fastnn::train::describe_cluster(args.hp);
          return 0;
        }
        fastnn::train::Trainer trainer(args.hp);
        if (args.dry_run) {
          std::cout << trainer.describe();
          return 0;
        }
        return trainer.run();
      });
}
