#!/bin/sh
# The images' ENTRYPOINT. Runs train_image_classifier with the container's
# arguments, unless the first argument names another program of the image;
# then it runs that one. So all of these work:
#   IMAGE --config configs/quickstart.cfg          (train_image_classifier)
#   IMAGE train_image_classifier --config F ...     (the Kubernetes manifests'
#                                                    args in deploy/k8s)
#   IMAGE eval_image_classifier --config F --checkpoint_path DIR
#   IMAGE convert_dataset | fastnn_job | sweep ...
# exec: the program itself becomes PID 1 and receives SIGTERM/SIGINT.
set -e
bin=$(dirname "$0")
case "${1:-}" in
  train_image_classifier | eval_image_classifier | convert_dataset | fastnn_job | sweep)
    prog=$1
    shift
    exec "$bin/$prog" "$@"
    ;;
esac
exec "$bin/train_image_classifier" "$@"
