"""Presentation only: turns env frames into pictures (ansi text, pygame, GIF/MP4, HTML replay).

Renderers know no env; envs hand them a frame description. Text envs render ``"ansi"`` through
their own observation text today; the pixel backends arrive with the renderers issue.
"""
