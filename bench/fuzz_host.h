/* Included first into each firmware source on the host build (bench/fuzz_host.c): the
 * firmware's `wfi` becomes `int3`, a trap the harness catches to play the host's side. */
__asm__(".macro wfi\n\tint3\n.endm");
