import sys
print(sum(1 for line in sys.stdin if line.startswith("- ")))
