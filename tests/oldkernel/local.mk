# make check-oldkernel: boots Debian 12's 6.1 kernel in qemu (software
# emulation) with the static driver and the Criterion suites in an
# initramfs: the blocking API passes, the async tests skip with the probe's
# reason. Downloads the kernel package once into the build tree's
# oldkernel/. See tests/oldkernel/run.sh.
OLDKERNEL_SUITES = $(check_PROGRAMS)
# scripts/deps.sh --oldkernel first installs qemu, busybox-static and cpio
# when they are missing (a fresh machine runs the test instead of skipping).
check-oldkernel: lib/libursa.la $(check_PROGRAMS)
	bash '$(abs_top_srcdir)/scripts/deps.sh' --oldkernel
	$(SHELL) '$(abs_top_srcdir)/tests/oldkernel/run.sh' '$(abs_top_builddir)' $(OLDKERNEL_SUITES)
EXTRA_DIST += tests/oldkernel/run.sh
