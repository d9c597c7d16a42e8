/* Trampolines for every forwarded BLAS/CBLAS routine. Each jumps through its
 * slot in hcops_forward_slots; an empty slot goes to the resolver first. A
 * jump passes every argument register, stack argument and return value
 * through untouched, whatever the routine's signature (complex returns,
 * hidden Fortran string lengths or their absence), so no prototype is needed
 * and nothing is translated. */

        .hidden hcops_forward_slots
        .hidden hcops_forward_resolve
        .hidden hcops_forward_missing

#define HCOPS_FORWARD(idx, name)                       \
        .text;                                         \
        .globl name;                                   \
        .type name, @function;                         \
        .p2align 4;                                    \
name:   movq hcops_forward_slots+8*(idx)(%rip), %r11;  \
        testq %r11, %r11;                              \
        jz 1f;                                         \
        jmp *%r11;                                     \
1:      movl $(idx), %r11d;                            \
        jmp resolve_and_jump;                          \
        .size name, .-name;

#include "forwarded.def"

/* r11d: slot index. Saves the argument registers (rax carries the vector
 * register count of a variadic call), asks the C resolver for the target,
 * restores them and jumps, as the dynamic linker's lazy binding does. */
        .text
        .p2align 4
        .type resolve_and_jump, @function
resolve_and_jump:
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
        movl %r11d, %edi
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
        .size resolve_and_jump, .-resolve_and_jump

/* Target of a routine the reference does not have: returns zero in every
 * return register, after the resolver has reported the error once. */
        .p2align 4
        .globl hcops_forward_missing
        .type hcops_forward_missing, @function
hcops_forward_missing:
        xorl %eax, %eax
        pxor %xmm0, %xmm0
        pxor %xmm1, %xmm1
        ret
        .size hcops_forward_missing, .-hcops_forward_missing

        .section .note.GNU-stack,"",@progbits
