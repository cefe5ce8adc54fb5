#!/bin/bash
# mkvar.sh NAME  (after editing /tmp/m/v/NAME/{lib,kernel,include}); builds /tmp/m/v/NAME/mx and rw
set -e
cd /work/main
N=$1; D=/tmp/m/v/$N
if [ ! -d $D ]; then mkdir -p $D; cp -r lib kernel include $D/; cp build/config.h $D/; fi
gcc -O2 -std=gnu11 -pthread -DHAVE_CONFIG_H -I$D -I$D/include -Ibench bench/handoffs/mx.c $D/lib/*.c $D/kernel/*.c /tmp/m/absl_adapter.o $(pkg-config --libs absl_synchronization) -lstdc++ -luring -lnsync -o $D/mx
