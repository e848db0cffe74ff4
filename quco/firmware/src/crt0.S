/* QuCo reset entry: gp and stack, .bss cleared, FPU on, then main(), which never returns.
 * There is no .data to copy: quco.ld fails the link if any appears. */
    .section .text.init, "ax"
    .globl _start
_start:
    .option push
    .option norelax                 /* gp itself must not be relaxed against gp */
    la      gp, __global_pointer$
    .option pop
    la      sp, __stack_top
    la      t0, __bss_start         /* zero .bss (never empty: the cache lives there) */
    la      t1, __bss_end
1:  sw      zero, 0(t0)
    addi    t0, t0, 4
    bltu    t0, t1, 1b
    li      t0, 0x2000              /* mstatus.FS = Initial: F instructions trap until set */
    csrs    mstatus, t0
    fscsr   zero                    /* round to nearest even, no flags */
    tail    main
