# Area fragment (pthread shim): libursa-pthread, then its tests.
if HAVE_CRITERION
endif
