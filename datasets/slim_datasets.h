// TF-slim's TFRecord datasets beyond MNIST. Every record is a
// tf.train.Example with image/encoded, image/format, image/class/label,
// image/height and image/width (ImageNet adds keys the reader ignores:
// image/class/synset, image/class/text, image/object/bbox/*, image/filename,
// image/colorspace, image/channels).
//
//   cifar10   cifar10_train.tfrecord (50000), cifar10_test.tfrecord (10000)
//             PNG 32x32x3, 10 classes
//   flowers   flowers_{train,validation}_NNNNN-of-00005.tfrecord
//             (3320 / 350), original JPEG bytes, 5 classes
//   imagenet  train-NNNNN-of-01024 (1281167),
//             validation-NNNNN-of-00128 (50000), JPEG, no file suffix;
//             1001 classes: label 0 is "background", 1..1000 the synsets
//             in sorted order. labels_offset=1 trains a 1000-class network
//             (label - 1), as TF-slim's resnet/vgg checkpoints expect.
//
// dataset_dir/labels.txt ("id:name" a line) names the classes when present.
#pragma once

#include <string>
#include <vector>

#include "datasets/dataset_factory.h"

namespace fastnn::datasets {

DatasetSpec cifar10_spec();
DatasetSpec flowers_spec();
DatasetSpec imagenet_spec();

}  // namespace fastnn::datasets
