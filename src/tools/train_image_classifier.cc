// train_image_classifier --config FILE [--KEY=VALUE ...]
#include <iostream>

#include "fastnn/trainer.h"
#include "src/dist/cluster.h"
#include "src/train/tool_main.h"

int main(int argc, char** argv) {
  return fastnn::train::tool_main(
      argc,
      argv,
      "train_image_classifier",
      "--config FILE [--KEY=VALUE ...] [--dry_run]",
      [](fastnn::LoadResult& args) {
        if (args.print_cluster) {
          std::cout << fastnn::dist::describe(fastnn::dist::resolve_cluster(
              args.hp, fastnn::dist::process_environment()));
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
