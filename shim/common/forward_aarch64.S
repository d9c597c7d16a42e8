/* The code every forward table shares (the trampolines themselves are
 * generated per table by forward_aarch64.inc), on AArch64; forward_x86_64.S
 * on x86-64. Both are built, each empty on the other architecture. */
#if defined(__aarch64__)
        .hidden hcops_forward_resolve

/* x17: slot index, x16: the table's struct hcops_foreign. Saves the
 * argument registers (x0-x7, x8 the indirect result address, q0-q7),
 * asks the C resolver for the target, restores them and jumps, as the
 * dynamic linker's lazy binding does. Stack arguments are untouched: the
 * frame is popped before the jump. */
        .text
        .p2align 4
        .globl hcops_forward_resolve_and_jump
        .hidden hcops_forward_resolve_and_jump
        .type hcops_forward_resolve_and_jump, %function
hcops_forward_resolve_and_jump:
        stp x29, x30, [sp, #-224]!
        mov x29, sp
        stp x0, x1, [sp, #16]
        stp x2, x3, [sp, #32]
        stp x4, x5, [sp, #48]
        stp x6, x7, [sp, #64]
        str x8, [sp, #80]
        stp q0, q1, [sp, #96]
        stp q2, q3, [sp, #128]
        stp q4, q5, [sp, #160]
        stp q6, q7, [sp, #192]
        mov x0, x16
        mov w1, w17
        bl hcops_forward_resolve
        mov x16, x0
        ldp x0, x1, [sp, #16]
        ldp x2, x3, [sp, #32]
        ldp x4, x5, [sp, #48]
        ldp x6, x7, [sp, #64]
        ldr x8, [sp, #80]
        ldp q0, q1, [sp, #96]
        ldp q2, q3, [sp, #128]
        ldp q4, q5, [sp, #160]
        ldp q6, q7, [sp, #192]
        ldp x29, x30, [sp], #224
        br x16
        .size hcops_forward_resolve_and_jump, .-hcops_forward_resolve_and_jump

/* Target of a symbol that cannot be forwarded: returns zero in every return
 * register, after the resolver has reported it once. */
        .p2align 4
        .globl hcops_forward_missing
        .hidden hcops_forward_missing
        .type hcops_forward_missing, %function
hcops_forward_missing:
        mov x0, #0
        mov x1, #0
        movi v0.2d, #0
        movi v1.2d, #0
        ret
        .size hcops_forward_missing, .-hcops_forward_missing
#endif

        .section .note.GNU-stack,"",%progbits
