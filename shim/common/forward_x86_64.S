/* The code every forward table shares (the trampolines themselves are
 * generated per table by forward_x86_64.inc), on x86-64; forward_aarch64.S
 * on AArch64. Both are built, each empty on the other architecture. */
#if defined(__x86_64__)

        .hidden hcops_forward_resolve

/* r11d: slot index, r10: the table's struct hcops_foreign. Saves the
 * argument registers (rax carries the vector register count of a variadic
 * call), asks the C resolver for the target, restores them and jumps, as
 * the dynamic linker's lazy binding does. */
        .text
        .p2align 4
        .globl hcops_forward_resolve_and_jump
        .hidden hcops_forward_resolve_and_jump
        .type hcops_forward_resolve_and_jump, @function
hcops_forward_resolve_and_jump:
        pushq %rbp
        movq %rsp, %rbp
        subq $192, %rsp
        movq %rdi, 0(%rsp)
        movq %rsi, 8(%rsp)
        movq %rdx, 16(%rsp)
        movq %rcx, 24(%rsp)
        movq %r8, 32(%rsp)
        movq %r9, 40(%rsp)
        movq %rax, 48(%rsp)
        movdqu %xmm0, 64(%rsp)
        movdqu %xmm1, 80(%rsp)
        movdqu %xmm2, 96(%rsp)
        movdqu %xmm3, 112(%rsp)
        movdqu %xmm4, 128(%rsp)
        movdqu %xmm5, 144(%rsp)
        movdqu %xmm6, 160(%rsp)
        movdqu %xmm7, 176(%rsp)
        movq %r10, %rdi
        movl %r11d, %esi
        call hcops_forward_resolve
        movq %rax, %r11
        movq 0(%rsp), %rdi
        movq 8(%rsp), %rsi
        movq 16(%rsp), %rdx
        movq 24(%rsp), %rcx
        movq 32(%rsp), %r8
        movq 40(%rsp), %r9
        movq 48(%rsp), %rax
        movdqu 64(%rsp), %xmm0
        movdqu 80(%rsp), %xmm1
        movdqu 96(%rsp), %xmm2
        movdqu 112(%rsp), %xmm3
        movdqu 128(%rsp), %xmm4
        movdqu 144(%rsp), %xmm5
        movdqu 160(%rsp), %xmm6
        movdqu 176(%rsp), %xmm7
        movq %rbp, %rsp
        popq %rbp
        jmp *%r11
        .size hcops_forward_resolve_and_jump, .-hcops_forward_resolve_and_jump

/* Target of a symbol that cannot be forwarded: returns zero in every return
 * register, after the resolver has reported it once. */
        .p2align 4
        .globl hcops_forward_missing
        .hidden hcops_forward_missing
        .type hcops_forward_missing, @function
hcops_forward_missing:
        xorl %eax, %eax
        xorl %edx, %edx
        pxor %xmm0, %xmm0
        pxor %xmm1, %xmm1
        ret
        .size hcops_forward_missing, .-hcops_forward_missing
#endif

        .section .note.GNU-stack,"",%progbits
