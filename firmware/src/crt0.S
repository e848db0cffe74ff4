/* QuCo reset entry: stack, .data copy, .bss clear, FPU on, then main(). */
    .section .text.init, "ax"
    .globl _start
_start:
    .option push
    .option norelax                 /* gp itself must not be relaxed against gp */
    la      gp, __global_pointer$
    .option pop
    la      sp, __stack_top
    la      t0, __data_start        /* copy initialised data from ROM */
    la      t1, __data_end
    la      t2, __data_load
1:  bgeu    t0, t1, 2f
    lw      t3, 0(t2)
    sw      t3, 0(t0)
    addi    t0, t0, 4
    addi    t2, t2, 4
    j       1b
2:  la      t0, __bss_start         /* zero .bss */
    la      t1, __bss_end
3:  bgeu    t0, t1, 4f
    sw      zero, 0(t0)
    addi    t0, t0, 4
    j       3b
4:  li      t0, 0x2000              /* mstatus.FS = Initial: F instructions trap until set */
    csrs    mstatus, t0
    fscsr   zero                    /* round to nearest even, no flags */
    call    main
5:  wfi                             /* main never returns; park if it does */
    j       5b
