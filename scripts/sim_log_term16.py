#!/usr/bin/env python3
"""fwd16 (session 7): the f32 LSE of bf16 rows three ways, in float32 arithmetic emulated with numpy, against a long-double
reference: (ours) the product-compensated log term of common.cuh log_term_exp_ftz, (unfolded) 2^fl(fl(x - m)*log2e_hi)
as log_term_exp16, (torchlike) expf(fl(x - m)). Ties counted, the rest summed by a pairwise tree, LSE = m + log1p(d)
as the kernels do. exp2 and exp are emulated correctly rounded (the GPU's are within 2 ulp). Errors in ulps of the f32
LSE. docs/semantics.md §6 ("16-bit inputs") quotes its output. Usage: python3 scripts/sim_log_term16.py"""
import numpy as np
rng=np.random.default_rng(7)
f=np.float32
L_hi=f(1.44269502162933349609375); L_lo=f(1.925963033500011e-08); LN2=f(0.693147180559945309)
def bf16(a):
    b=a.astype(np.float32).view(np.uint32)
    b=((b+0x7fff+((b>>16)&1))&0xffff0000).astype(np.uint32)
    return b.view(np.float32)
def ex2(t): return np.exp2(t.astype(np.float64)).astype(np.float32)
def tree(a):
    a=a.copy()
    while a.shape[-1]>1:
        if a.shape[-1]%2: a=np.concatenate([a,np.zeros(a.shape[:-1]+(1,),np.float32)],-1)
        a=(a[...,0::2]+a[...,1::2]).astype(np.float32)
    return a[...,0]
def lse_variant(x,kind):
    m=x.max(-1,keepdims=True)
    d=(x-m).astype(np.float32)
    tie=(d==0)
    if kind=='ours':
        t=(d*L_hi).astype(np.float32)
        r=(d.astype(np.float64)*np.float64(L_hi)-t).astype(np.float32)  # exact residual (fma)
        c=((d.astype(np.float64)*np.float64(L_lo)+r).astype(np.float32)*LN2).astype(np.float32)
        e=ex2(t); e=(e.astype(np.float64)*c+e).astype(np.float32)
    elif kind=='unfolded':
        e=ex2((d*L_hi).astype(np.float32))
    else:
        e=np.exp(d.astype(np.float64)).astype(np.float32)
    rest=tree(np.where(tie,f(0),e))
    ties=tie.sum(-1)
    dd=((ties-1).astype(np.float32)+rest).astype(np.float32)
    logl=np.log1p(dd.astype(np.float64)).astype(np.float32)
    return (m[...,0]+logl).astype(np.float32)
for n,sd in [(1000,4),(7,4),(32768,4),(128,1),(4096,2)]:
    rows=max(1,min(1024,(1<<20)//n))
    x=bf16(rng.normal(0,sd,(rows,n)))
    xl=x.astype(np.longdouble); m=xl.max(-1,keepdims=True)
    ex=(m[...,0]+np.log(np.exp(xl-m).sum(-1)))
    ulp=np.spacing(np.abs(ex.astype(np.float32))).astype(np.longdouble)
    out=[]
    for k in ['ours','unfolded','torchlike']:
        y=lse_variant(x,k).astype(np.longdouble)
        err=np.abs(y-ex)/ulp
        out.append('%s max %.2f mean %.3f'%(k,float(err.max()),float(err.mean())))
    print(n,sd,rows,' | '.join(out))
