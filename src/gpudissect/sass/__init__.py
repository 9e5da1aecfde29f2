"""The SASS instruction level: cubin sections, encoding discovery, control codes, a binary patcher."""
